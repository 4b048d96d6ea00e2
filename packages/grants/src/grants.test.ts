import { describe, expect, it } from "vitest";
import {
  ALL_RIGHTS,
  Right,
  anyRights,
  compileGrants,
  deploymentRights,
  parseAnonymousRights,
  parseScope,
  parseTokens,
  pathUnderPrefix,
  rightsFor,
} from "./index.js";

const NOW = Date.parse("2026-06-01T00:00:00Z");

describe("right tokens", () => {
  it("accepts every surface:verb, surface:* and bare *", () => {
    const r = parseTokens(["repository:read", "cache:*", "manage:write"]);
    expect(r).toEqual({
      ok: true,
      tokens: ["cache:*", "manage:write", "repository:read"],
      bits: Right.repositoryRead | Right.cacheRead | Right.cacheWrite | Right.manageWrite,
    });
    expect(parseTokens(["*"])).toMatchObject({ ok: true, bits: ALL_RIGHTS });
  });

  it("expands the built-in roles", () => {
    expect(parseTokens(["read-only"])).toEqual({ ok: true, tokens: ["cache:read", "repository:read"], bits: Right.repositoryRead | Right.cacheRead });
    expect(parseTokens(["deploy"])).toMatchObject({
      ok: true,
      bits: Right.repositoryRead | Right.repositoryWrite | Right.cacheRead | Right.cacheWrite,
    });
    expect(parseTokens(["admin"])).toEqual({ ok: true, tokens: ["*"], bits: ALL_RIGHTS });
  });

  it("refuses unknown surfaces, verbs and malformed tokens, naming the bad one", () => {
    for (const bad of ["repository:delete", "store:read", "repository", "read", "", "**", "repository:read ,", "Repository:read"]) {
      expect(parseTokens(["repository:read", bad])).toEqual({ ok: false, bad });
    }
  });

  it("a deploy role holds no manage right", () => {
    const r = parseTokens(["deploy"]);
    expect(r.ok && (r.bits & (Right.manageRead | Right.manageWrite))).toBe(0);
  });
});

describe("scopes", () => {
  it("parses a repository, * and a repository with a prefix", () => {
    expect(parseScope("libs")).toEqual({ ok: true, scope: { repository: "libs", prefix: "" }, text: "libs" });
    expect(parseScope("*")).toEqual({ ok: true, scope: { repository: "*", prefix: "" }, text: "*" });
    expect(parseScope("libs:com/acme")).toEqual({ ok: true, scope: { repository: "libs", prefix: "com/acme" }, text: "libs:com/acme" });
  });

  it("refuses a prefix it would otherwise have to rewrite, naming the form to write", () => {
    for (const bad of ["libs:/com/acme/", "default:/com", "libs:com/", "libs:com//acme"]) {
      const r = parseScope(bad);
      expect(r.ok, bad).toBe(false);
      expect(!r.ok && r.reason, bad).toMatch(/must not start or end with "\/"/);
    }
    expect(!parseScope("default:/com").ok && (parseScope("default:/com") as { reason: string }).reason).toContain("write default:com");
  });

  it("refuses control and bidirectional characters in a prefix, without echoing them", () => {
    for (const bad of ["libs:com\u0000", "libs:a\u0007b", "libs:\u202eexe.jar", "libs:a/\u2066b", "libs:a\u0085"]) {
      const r = parseScope(bad);
      expect(r.ok, JSON.stringify(bad)).toBe(false);
      expect(!r.ok && r.reason).not.toMatch(/[\u0000-\u001f\u0085\u202e\u2066]/);
    }
  });

  it("refuses bad repository names and prefixes", () => {
    for (const bad of ["", "a b", "../x", "libs:", "libs:/", "libs:a/../b", "libs:./a", "-libs", "li*bs", "libs:a\\b"]) {
      expect(parseScope(bad).ok, bad).toBe(false);
    }
  });

  it("matches a prefix only on a segment boundary", () => {
    expect(pathUnderPrefix("com/acme", "com/acme")).toBe(true);
    expect(pathUnderPrefix("com/acme/lib.jar", "com/acme")).toBe(true);
    expect(pathUnderPrefix("com/acmecorp/lib.jar", "com/acme")).toBe(false);
    expect(pathUnderPrefix("com/acm", "com/acme")).toBe(false);
    expect(pathUnderPrefix("com", "com/acme")).toBe(false);
    expect(pathUnderPrefix("anything", "")).toBe(true);
  });
});

describe("deciding rights", () => {
  const grants = compileGrants([
    { scope: "libs", tokens: ["repository:read"] },
    { scope: "libs:com/acme", tokens: ["repository:write"] },
    { scope: "docs", tokens: ["repository:*"], expires: "2026-05-01T00:00:00Z" },
  ]);

  it("grants a repository's rights only when that repository is named", () => {
    expect(rightsFor(grants, "libs", "x/y", NOW)).toBe(Right.repositoryRead);
    expect(rightsFor(grants, "other", "x/y", NOW)).toBe(0);
  });

  it("without a named repository only a wildcard grant counts", () => {
    expect(rightsFor(grants, "*", "com/acme/a.jar", NOW)).toBe(0);
    const wild = compileGrants([{ scope: "*", tokens: ["repository:read"] }]);
    expect(rightsFor(wild, "*", "anything", NOW)).toBe(Right.repositoryRead);
    expect(rightsFor(wild, "libs", "anything", NOW)).toBe(Right.repositoryRead);
  });

  it("adds a prefix grant only at or under its prefix", () => {
    expect(rightsFor(grants, "libs", "com/acme/a.jar", NOW)).toBe(Right.repositoryRead | Right.repositoryWrite);
    expect(rightsFor(grants, "libs", "com/acmecorp/a.jar", NOW)).toBe(Right.repositoryRead);
  });

  it("a lapsed grant stops only its own scope", () => {
    expect(rightsFor(grants, "docs", "a", NOW)).toBe(0);
    expect(rightsFor(grants, "docs", "a", Date.parse("2026-04-01T00:00:00Z"))).toBe(Right.repositoryRead | Right.repositoryWrite);
    expect(rightsFor(grants, "libs", "a", NOW)).toBe(Right.repositoryRead);
  });

  it("an expiry that cannot be read back counts as expired", () => {
    const g = compileGrants([{ scope: "*", tokens: ["*"], expires: "not a date" }]);
    expect(rightsFor(g, "*", "a", NOW)).toBe(0);
    expect(deploymentRights(g, NOW)).toBe(0);
  });

  it("deployment rights come only from an unprefixed * grant", () => {
    const g = compileGrants([
      { scope: "*:com", tokens: ["manage:*"] },
      { scope: "libs", tokens: ["manage:*"] },
    ]);
    expect(deploymentRights(g, NOW)).toBe(0);
    expect(anyRights(g, NOW)).toBe(Right.manageRead | Right.manageWrite);
    const admin = compileGrants([{ scope: "*", tokens: ["*"] }]);
    expect(deploymentRights(admin, NOW)).toBe(ALL_RIGHTS);
  });
});

describe("anonymous rights grammar", () => {
  it("reads every form the spec lists", () => {
    expect(parseAnonymousRights("")).toEqual({ ok: true, grants: [] });
    expect(parseAnonymousRights("repository:read")).toEqual({ ok: true, grants: [{ scope: "*", tokens: ["repository:read"] }] });
    expect(parseAnonymousRights("libs=repository:read, docs=repository:read")).toEqual({
      ok: true,
      grants: [
        { scope: "libs", tokens: ["repository:read"] },
        { scope: "docs", tokens: ["repository:read"] },
      ],
    });
    expect(parseAnonymousRights("cache:*")).toEqual({ ok: true, grants: [{ scope: "*", tokens: ["cache:*"] }] });
    expect(parseAnonymousRights("*")).toEqual({ ok: true, grants: [{ scope: "*", tokens: ["*"] }] });
  });

  it("refuses bad tokens and repository names", () => {
    expect(parseAnonymousRights("repository:delete").ok).toBe(false);
    expect(parseAnonymousRights("bad name=repository:read").ok).toBe(false);
    expect(parseAnonymousRights("admin").ok).toBe(false);
  });
});
