import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSuite, type Suite } from "./suite.js";

type Person = { id: string; label: string | null; grants: { scope: string; tokens: string[]; expires: string | null }[] };
type Group = { name: string; grants: { scope: string; tokens: string[] }[]; members: number };
type Rights = { id: string; groups: string[]; grants: { scope: string; tokens: string[]; via: string }[] };

let s: Suite;
beforeAll(async () => {
  s = await startSuite({ env: { SVC_UI_ADMINS: "oidc/alice,oauth/1001" } });
});
afterAll(() => s?.stop());

const api = (method: string, path: string, body?: object) => s.call(method, path, { key: s.bootstrapKey, body });
const people = async () => (await (await api("GET", "/api/principals")).json()) as Person[];
const rights = async (id: string) => (await (await api("GET", `/api/principals/rights?id=${encodeURIComponent(id)}`)).json()) as Rights;
const g = (name: string) => encodeURIComponent(name);

describe("people", () => {
  it("seeds svc.ui.admins with deployment-wide administration", async () => {
    const list = await people();
    for (const id of ["oidc/alice", "oauth/1001"]) {
      expect(list.find((p) => p.id === id)?.grants).toEqual([{ scope: "*", tokens: ["*"], expires: null }]);
    }
  });

  it("removing an id from svc.ui.admins leaves the administration granted", async () => {
    await s.stopService("auth");
    await s.startService("auth", { SVC_UI_ADMINS: "oauth/1001" });
    expect((await people()).find((p) => p.id === "oidc/alice")?.grants).toEqual([{ scope: "*", tokens: ["*"], expires: null }]);
  });

  it("grants a person rights at a scope and removes them", async () => {
    const res = await api("POST", "/api/principals/grants", { id: "oidc/bob", label: "Bob", scope: "default", tokens: ["deploy"], expires: "P1D" });
    expect(res.status).toBe(200);
    const bob = (await people()).find((p) => p.id === "oidc/bob")!;
    expect(bob.label).toBe("Bob");
    expect(bob.grants).toHaveLength(1);
    expect(bob.grants[0]!.tokens).toEqual(["cache:read", "cache:write", "repository:read", "repository:write"]);
    const del = await api("DELETE", `/api/principals/grants?id=oidc/bob&scope=default`);
    expect(del.status).toBe(204);
    expect((await api("DELETE", `/api/principals/grants?id=oidc/bob&scope=default`)).status).toBe(404);
    expect((await people()).find((p) => p.id === "oidc/bob")?.grants).toEqual([]);
  });

  it("refuses ids that are not oauth/<id> or oidc/<sub>", async () => {
    for (const id of ["bob", "ldap/bob", "oidc/", "oidc/has space", "OIDC/bob"]) {
      const res = await api("POST", "/api/principals/grants", { id, scope: "*", tokens: ["read-only"] });
      expect(res.status, id).toBe(400);
      expect(((await res.json()) as { field: string }).field).toBe("id");
    }
    expect((await api("DELETE", "/api/principals?id=bob")).status).toBe(400);
    expect((await people()).some((p) => p.id === "bob")).toBe(false);
  });

  it("removing a person removes direct grants and metadata but leaves group memberships", async () => {
    await api("POST", "/api/principals/grants", { id: "oauth/carol", label: "Carol", scope: "*", tokens: ["read-only"] });
    await api("POST", `/api/groups/${g("builders")}/members`, { id: "oauth/carol" });
    expect((await api("DELETE", "/api/principals?id=oauth/carol")).status).toBe(204);
    expect((await people()).some((p) => p.id === "oauth/carol")).toBe(false);
    const members = (await (await api("GET", `/api/groups/${g("builders")}/members`)).json()) as { id: string }[];
    expect(members.map((m) => m.id)).toContain("oauth/carol");
    expect((await api("DELETE", "/api/principals?id=oauth/nobody")).status).toBe(404);
  });

  it("pages people", async () => {
    for (let i = 0; i < 4; i++) await api("POST", "/api/principals/grants", { id: `oidc/p${i}`, scope: "*", tokens: ["read-only"] });
    const first = await api("GET", "/api/principals?limit=2");
    const cursor = first.headers.get("x-next-cursor");
    expect(cursor).toBeTruthy();
    const second = (await (await api("GET", `/api/principals?limit=2&after=${encodeURIComponent(cursor!)}`)).json()) as Person[];
    expect(second[0]!.id > cursor!).toBe(true);
    expect((await api("GET", "/api/principals?limit=900")).status).toBe(400);
  });
});

describe("groups", () => {
  it("a first member creates the group; a group with members and no grants confers nothing", async () => {
    const res = await api("POST", `/api/groups/${g("release managers")}/members`, { id: "oidc/dave" });
    expect(res.status).toBe(201);
    expect((await api("POST", `/api/groups/${g("release managers")}/members`, { id: "oidc/dave" })).status).toBe(200);
    const groups = (await (await api("GET", "/api/groups")).json()) as Group[];
    expect(groups.find((x) => x.name === "release managers")).toMatchObject({ grants: [], members: 1 });
    expect((await rights("oidc/dave")).grants).toEqual([]);
  });

  it("a member's effective rights are direct grants plus the groups' grants, re-derived before the call returns", async () => {
    await api("POST", "/api/principals/grants", { id: "oidc/erin", scope: "docs", tokens: ["read-only"] });
    await api("POST", `/api/groups/${g("deployers")}/grants`, { scope: "default", tokens: ["deploy"] });
    expect((await rights("oidc/erin")).grants.map((x) => x.via)).toEqual(["direct"]);
    await api("POST", `/api/groups/${g("deployers")}/members`, { id: "oidc/erin" });
    const after = await rights("oidc/erin");
    expect(after.groups).toEqual(["deployers"]);
    expect(after.grants).toEqual([
      { scope: "docs", tokens: ["cache:read", "repository:read"], expires: null, via: "direct" },
      { scope: "default", tokens: ["cache:read", "cache:write", "repository:read", "repository:write"], expires: null, via: "group:deployers" },
    ]);
    expect((await api("DELETE", `/api/groups/${g("deployers")}/members?id=oidc/erin`)).status).toBe(204);
    expect((await rights("oidc/erin")).grants.map((x) => x.via)).toEqual(["direct"]);
    expect((await api("DELETE", `/api/groups/${g("deployers")}/members?id=oidc/erin`)).status).toBe(404);
  });

  it("removes a group's grant by scope and deletes a group with its memberships", async () => {
    await api("POST", `/api/groups/${g("temp")}/grants`, { scope: "default:a/b", tokens: ["read-only"] });
    await api("POST", `/api/groups/${g("temp")}/members`, { id: "oidc/frank" });
    expect((await rights("oidc/frank")).grants).toHaveLength(1);
    expect((await api("DELETE", `/api/groups/${g("temp")}/grants/${encodeURIComponent("default:a/b")}`)).status).toBe(204);
    expect((await rights("oidc/frank")).grants).toHaveLength(0);
    await api("POST", `/api/groups/${g("temp")}/grants`, { scope: "*", tokens: ["read-only"] });
    expect((await api("DELETE", `/api/groups/${g("temp")}`)).status).toBe(204);
    const r = await rights("oidc/frank");
    expect(r.groups).toEqual([]);
    expect(r.grants).toEqual([]);
    expect((await api("GET", `/api/groups/${g("temp")}/members`)).status).toBe(404);
    expect((await api("DELETE", `/api/groups/${g("temp")}`)).status).toBe(404);
  });

  it("pages members", async () => {
    for (let i = 0; i < 5; i++) await api("POST", `/api/groups/${g("big")}/members`, { id: `oidc/m${i}` });
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await api("GET", `/api/groups/${g("big")}/members?limit=2${cursor ? `&after=${encodeURIComponent(cursor)}` : ""}`);
      ids.push(...((await res.json()) as { id: string }[]).map((m) => m.id));
      cursor = res.headers.get("x-next-cursor");
    } while (cursor);
    expect(ids).toEqual(["oidc/m0", "oidc/m1", "oidc/m2", "oidc/m3", "oidc/m4"]);
  });

  it("refuses bad names, scopes, tokens and member ids with 400 and changes nothing", async () => {
    const before = await (await api("GET", "/api/groups")).text();
    expect((await api("POST", `/api/groups/${g("x")}/grants`, { scope: "bad scope", tokens: ["read-only"] })).status).toBe(400);
    expect((await api("POST", `/api/groups/${g("x")}/grants`, { scope: "*", tokens: ["nope"] })).status).toBe(400);
    expect((await api("POST", `/api/groups/${g("x")}/members`, { id: "not-a-person" })).status).toBe(400);
    expect((await api("POST", `/api/groups/${g(" padded ")}/members`, { id: "oidc/x" })).status).toBe(400);
    expect((await api("POST", `/api/groups/${g("x")}/members`, { id: "oidc/x", extra: true })).status).toBe(400);
    expect(await (await api("GET", "/api/groups")).text()).toBe(before);
  });

  it("answers 404 for unknown groups and grants", async () => {
    expect((await api("GET", `/api/groups/${g("ghost")}/members`)).status).toBe(404);
    expect((await api("DELETE", `/api/groups/${g("ghost")}/grants/*`)).status).toBe(404);
    expect((await api("DELETE", `/api/groups/${g("ghost")}/members?id=oidc/x`)).status).toBe(404);
  });
});

describe("concurrent administration", () => {
  it("two admins changing one key at once lose no update", async () => {
    const k = await s.mint();
    const scopes = Array.from({ length: 20 }, (_, i) => `repo${i}`);
    const results = await Promise.all(scopes.map((scope) => api("POST", `/api/credentials/${k.id}/grants`, { scope, tokens: ["read-only"] })));
    expect(results.map((r) => r.status)).toEqual(scopes.map(() => 200));
    const cred = ((await (await api("GET", "/api/credentials")).json()) as { id: string; grants: { scope: string }[] }[]).find((c) => c.id === k.id)!;
    expect(cred.grants.map((x) => x.scope).sort()).toEqual([...scopes].sort());
  });

  it("members added to a new group at once all arrive", async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `oidc/c${String(i).padStart(2, "0")}`);
    const results = await Promise.all(ids.map((id) => api("POST", `/api/groups/${g("crowd")}/members`, { id })));
    expect(results.map((r) => r.status)).toEqual(ids.map(() => 201));
    const members = (await (await api("GET", `/api/groups/${g("crowd")}/members`)).json()) as { id: string }[];
    expect(members.map((m) => m.id)).toEqual(ids);
  });
});
