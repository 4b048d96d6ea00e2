import { describe, expect, it } from "vitest";
import { Right, bitsToTokens, compileGrants, intersectGrants, intersectScopes, rightsFor, rightsOver } from "./index.js";

const NOW = Date.parse("2026-06-01T00:00:00Z");
const g = (scope: string, tokens: string[], expires: string | null = null) => ({ scope, tokens, expires });

describe("what a personal key holds", () => {
  it("the narrower of two overlapping scopes, nothing for disjoint ones", () => {
    expect(intersectScopes("*", "libs")).toBe("libs");
    expect(intersectScopes("libs", "*")).toBe("libs");
    expect(intersectScopes("libs", "libs:com/acme")).toBe("libs:com/acme");
    expect(intersectScopes("libs:com", "*:com/acme/x")).toBe("libs:com/acme/x");
    expect(intersectScopes("libs", "apps")).toBeNull();
    expect(intersectScopes("libs:com/acme", "libs:com/acmecorp")).toBeNull();
  });

  it("writes rights in their shortest tokens", () => {
    expect(bitsToTokens(Right.repositoryRead | Right.repositoryWrite | Right.cacheRead)).toEqual(["repository:*", "cache:read"]);
    expect(bitsToTokens(0b111111)).toEqual(["*"]);
  });

  it("holds only the rights both the key and its owner hold, over the scopes both cover", () => {
    const chosen = [g("*", ["*"])];
    const held = [g("libs", ["repository:read", "repository:write"]), g("*", ["manage:read"])];
    const key = compileGrants(intersectGrants(chosen, held, NOW));
    expect(rightsFor(key, "libs", "a/b", NOW)).toBe(Right.repositoryRead | Right.repositoryWrite | Right.manageRead);
    expect(rightsFor(key, "apps", "a/b", NOW)).toBe(Right.manageRead);
  });

  it("a right the owner loses is gone from the key, whatever the key was given", () => {
    const chosen = [g("libs", ["repository:read", "repository:write"])];
    expect(intersectGrants(chosen, [g("libs", ["repository:read"])], NOW)).toEqual([g("libs", ["repository:read"])]);
    expect(intersectGrants(chosen, [], NOW)).toEqual([]);
  });

  it("lapses at the earlier expiry, and a lapsed grant counts for nothing", () => {
    const soon = "2026-06-02T00:00:00.000Z";
    expect(intersectGrants([g("libs", ["*"])], [g("*", ["repository:read"], soon)], NOW)).toEqual([g("libs", ["repository:read"], soon)]);
    expect(intersectGrants([g("libs", ["*"])], [g("*", ["repository:read"], "2026-05-01T00:00:00Z")], NOW)).toEqual([]);
  });

  it("what a person may put on a key at a scope: the rights of grants that contain it", () => {
    const held = [g("libs", ["repository:read"]), g("libs:com/acme", ["repository:write"]), g("*", ["cache:read"])];
    expect(rightsOver("libs", held, NOW)).toBe(Right.repositoryRead | Right.cacheRead);
    expect(rightsOver("libs:com/acme/x", held, NOW)).toBe(Right.repositoryRead | Right.repositoryWrite | Right.cacheRead);
    expect(rightsOver("*", held, NOW)).toBe(Right.cacheRead);
  });
});
