import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSuite, type Suite } from "./suite.js";

// A grant naming a repository this deployment does not have is kept (granting ahead of creating
// the repository is legitimate), but the answer says so, so a typo does not go unnoticed.

type GrantAnswer = { scope: string; tokens: string[]; expires: string | null; warnings?: string[] };

let s: Suite;
beforeAll(async () => {
  s = await startSuite();
});
afterAll(() => s?.stop());

const api = (method: string, path: string, body?: object) => s.call(method, path, { key: s.bootstrapKey, body });

async function grant(path: string, body: object): Promise<GrantAnswer> {
  const res = await api("POST", path, body);
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as GrantAnswer;
}

describe("a grant naming a repository that does not exist", () => {
  it("is kept, and the answer of each grant route names the unknown repository", async () => {
    const { id } = await s.mint({ label: "ci" });
    const answers = [
      await grant(`/api/credentials/${id}/grants`, { scope: "libz", tokens: ["read-only"] }),
      await grant("/api/principals/grants", { id: "oidc/erin", scope: "libz:com/acme", tokens: ["deploy"] }),
      await grant(`/api/groups/builders/grants`, { scope: "libz", tokens: ["read-only"] }),
    ];
    for (const a of answers) {
      expect(a.warnings).toEqual(['repository "libz" does not exist (yet): check the name']);
    }
    // Kept as asked: the key holds the grant.
    const key = (await (await api("GET", `/api/credentials/${id}`)).json()) as { grants: { scope: string }[] };
    expect(key.grants.map((g) => g.scope)).toEqual(["libz"]);
  });

  it("an existing repository, * and a wildcard prefix scope give no warning", async () => {
    const { id } = await s.mint();
    for (const scope of ["default", "default:com/acme", "*", "*:com/acme"]) {
      const a = await grant(`/api/credentials/${id}/grants`, { scope, tokens: ["read-only"] });
      expect(a.warnings, scope).toBeUndefined();
    }
    const g = await grant("/api/groups/readers/grants", { scope: "default", tokens: ["read-only"] });
    expect(g.warnings).toBeUndefined();
  });

  it("while the artifacts service cannot be asked, the grant still succeeds, without the warning", async () => {
    await s.stopService("artifacts");
    try {
      const { id } = await s.mint();
      // The list fetched a moment ago may still answer (it is cached for a few seconds): every
      // grant succeeds meanwhile, and once the cache is out of date none carries a warning.
      const deadline = Date.now() + 30_000;
      let a: GrantAnswer;
      do {
        a = await grant(`/api/credentials/${id}/grants`, { scope: "libq", tokens: ["read-only"] });
        expect(a.scope).toBe("libq");
        if (a.warnings) await new Promise((r) => setTimeout(r, 250));
      } while (a.warnings && Date.now() < deadline);
      expect(a.warnings).toBeUndefined();
    } finally {
      await s.startService("artifacts");
    }
    // Asked again once artifacts answers: the list is not cached as empty.
    const { id } = await s.mint();
    const again = await grant(`/api/credentials/${id}/grants`, { scope: "libq", tokens: ["read-only"] });
    expect(again.warnings).toEqual(['repository "libq" does not exist (yet): check the name']);
  });
});
