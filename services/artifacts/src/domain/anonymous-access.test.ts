import { describe, expect, it } from "vitest";
import { anonymousReadFactory } from "./anonymous-access.js";

describe("whether a keyless caller may read a repository", () => {
  it("everyone may with svc.auth off, no one with no anonymous rights", () => {
    expect(anonymousReadFactory({ auth: false, anonymousRights: [], repositoryScopeFromPath: false })("r")).toBe(true);
    expect(anonymousReadFactory({ auth: true, anonymousRights: [], repositoryScopeFromPath: false })("r")).toBe(false);
  });

  it("repository:read over * opens every repository", () => {
    expect(anonymousReadFactory({ auth: true, anonymousRights: [{ scope: "*", tokens: ["repository:read"] }], repositoryScopeFromPath: false })("r")).toBe(true);
  });

  it("a grant on one repository counts only when the gateway authorises against the repository the path names", () => {
    const rights = [{ scope: "pub", tokens: ["repository:read"] }];
    expect(anonymousReadFactory({ auth: true, anonymousRights: rights, repositoryScopeFromPath: false })("pub")).toBe(false);
    const fromPath = anonymousReadFactory({ auth: true, anonymousRights: rights, repositoryScopeFromPath: true });
    expect([fromPath("pub"), fromPath("other")]).toEqual([true, false]);
  });
});
