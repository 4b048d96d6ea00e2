import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyId, makeKey } from "@svc/keys";
import { startSuite, type Suite } from "./suite.js";

let s: Suite;
beforeAll(async () => {
  s = await startSuite();
  const put = await s.call("PUT", "/repository/default/libs/com/acme/app.jar", { key: s.bootstrapKey, body: "jar-bytes" });
  expect(put.status).toBe(201);
  await s.call("PUT", "/repository/default/libs/com/acmecorp/other.jar", { key: s.bootstrapKey, body: "other" });
});
afterAll(() => s?.stop());

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

describe("presenting a key", () => {
  it("answers 401 with a Basic challenge on artifact paths when no key is sent", async () => {
    const res = await s.call("GET", "/repository/default/libs/com/acme/app.jar");
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(/^Basic /);
  });

  it("answers a bare 401 on /api/ when no key is sent", async () => {
    const res = await s.call("GET", "/api/credentials");
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBeNull();
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  });

  it("reads the key from Service-Repository-Key, Bearer, a bare Authorization value and Basic's password", async () => {
    const k = s.bootstrapKey;
    const path = "/repository/default/libs/com/acme/app.jar";
    for (const headers of <Record<string, string>[]>[
      { "service-repository-key": k },
      { authorization: `Bearer ${k}` },
      { authorization: k },
      { authorization: basic("whoever", k) },
      { authorization: basic("", k) },
    ]) {
      const res = await s.call("GET", path, { headers });
      expect(res.status, JSON.stringify(Object.keys(headers))).toBe(200);
      expect(await res.text()).toBe("jar-bytes");
    }
  });

  it("lets Service-Repository-Key win over Authorization", async () => {
    const weak = await s.mint();
    const res = await s.call("GET", "/repository/default/libs/com/acme/app.jar", {
      headers: { "service-repository-key": weak.key, authorization: `Bearer ${s.bootstrapKey}` },
    });
    expect(res.status).toBe(403);
  });

  it("treats anything but a well-formed key in Authorization as no key", async () => {
    for (const authorization of ["Bearer not-a-key", "Basic " + Buffer.from("user:password").toString("base64"), "Digest abc", "Bearer " + s.bootstrapKey.slice(0, -1) + "x"]) {
      const api = await s.call("GET", "/api/credentials", { headers: { authorization } });
      expect(api.status).toBe(401);
      expect(api.headers.get("www-authenticate")).toBeNull();
      const art = await s.call("GET", "/repository/default/libs/com/acme/app.jar", { headers: { authorization } });
      expect(art.status).toBe(401);
      expect(art.headers.get("www-authenticate")).toMatch(/^Basic /);
    }
  });

  it("refuses a malformed key in Service-Repository-Key with 401", async () => {
    for (const bad of ["svck_default.short", "nope", s.bootstrapKey.replace("svck_", "svcx_"), s.bootstrapKey.slice(0, -2) + "AA"]) {
      const res = await s.call("GET", "/repository/default/libs/com/acme/app.jar", { key: bad });
      expect(res.status).toBe(401);
      expect(await res.text()).toMatch(/malformed/);
    }
  });

  it("refuses a key of another tenant", async () => {
    const res = await s.call("GET", "/api/credentials", { key: makeKey("othertenant") });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/another tenant/);
  });

  it("refuses a well-formed key nobody minted", async () => {
    const res = await s.call("GET", "/api/credentials", { key: makeKey() });
    expect(res.status).toBe(401);
  });
});

describe("rights", () => {
  it("a new key holds nothing until granted", async () => {
    const k = await s.mint();
    expect((await s.call("GET", "/repository/default/libs/com/acme/app.jar", { key: k.key, headers: { "service-repository-name": "default" } })).status).toBe(403);
    expect((await s.call("GET", "/api/credentials", { key: k.key })).status).toBe(403);
    expect((await s.call("GET", "/api/capabilities", { key: k.key })).status).toBe(403);
  });

  it("without Service-Repository-Name only a wildcard grant satisfies", async () => {
    const named = await s.mint({ grants: [{ scope: "default", tokens: ["read-only"] }] });
    const path = "/repository/default/libs/com/acme/app.jar";
    expect((await s.call("GET", path, { key: named.key })).status).toBe(403);
    expect((await s.call("GET", path, { key: named.key, headers: { "service-repository-name": "default" } })).status).toBe(200);
    const wild = await s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
    expect((await s.call("GET", path, { key: wild.key })).status).toBe(200);
  });

  it("refuses a Service-Repository-Name that differs from the repository the route serves", async () => {
    const k = await s.mint({ grants: [{ scope: "other", tokens: ["deploy"] }] });
    const res = await s.call("GET", "/repository/default/libs/com/acme/app.jar", { key: k.key, headers: { "service-repository-name": "other" } });
    expect(res.status).toBe(403);
    expect(await res.text()).toMatch(/Service-Repository-Name names repository "other"/);
    const put = await s.call("PUT", "/repository/default/libs/x.txt", { key: k.key, body: "x", headers: { "service-repository-name": "other" } });
    expect(put.status).toBe(403);
  });

  it("GET and HEAD need repository:read, other methods repository:write", async () => {
    const reader = await s.mint({ grants: [{ scope: "default", tokens: ["repository:read"] }] });
    const h = { "service-repository-name": "default" };
    expect((await s.call("HEAD", "/repository/default/libs/com/acme/app.jar", { key: reader.key, headers: h })).status).toBe(200);
    expect((await s.call("PUT", "/repository/default/libs/new.txt", { key: reader.key, headers: h, body: "n" })).status).toBe(403);
    expect((await s.call("DELETE", "/repository/default/libs/com/acme/app.jar", { key: reader.key, headers: h })).status).toBe(403);
    const writer = await s.mint({ grants: [{ scope: "default", tokens: ["repository:write"] }] });
    expect((await s.call("PUT", "/repository/default/libs/new.txt", { key: writer.key, headers: h, body: "n" })).status).toBe(201);
    expect((await s.call("GET", "/repository/default/libs/new.txt", { key: writer.key, headers: h })).status).toBe(403);
  });

  it("a path-prefix scope covers only paths at or under the prefix on a segment boundary", async () => {
    const k = await s.mint({ grants: [{ scope: "default:libs/com/acme", tokens: ["deploy"] }] });
    const h = { "service-repository-name": "default" };
    expect((await s.call("GET", "/repository/default/libs/com/acme/app.jar", { key: k.key, headers: h })).status).toBe(200);
    expect((await s.call("GET", "/repository/default/libs/com/acmecorp/other.jar", { key: k.key, headers: h })).status).toBe(403);
    expect((await s.call("PUT", "/repository/default/libs/com/acme/v2/app.jar", { key: k.key, headers: h, body: "v2" })).status).toBe(201);
    expect((await s.call("PUT", "/repository/default/libs/com/acme.jar", { key: k.key, headers: h, body: "x" })).status).toBe(403);
    // Encoded segments are decoded before the prefix check: %61cme is acme, %2e%2e never escapes.
    expect((await s.call("GET", "/repository/default/libs/com/%61cme/app.jar", { key: k.key, headers: h })).status).toBe(200);
    const escape = await s.rawCall("GET", "/repository/default/libs/com/acme/%2e%2e/acmecorp/other.jar", { ...h, "service-repository-key": k.key });
    expect(escape.status).toBe(400);
  });

  it("/api/ needs manage rights at *: a deploy key cannot administer", async () => {
    const deploy = await s.mint({ grants: [{ scope: "*", tokens: ["deploy"] }] });
    expect((await s.call("GET", "/api/credentials", { key: deploy.key })).status).toBe(403);
    expect((await s.call("POST", "/api/credentials", { key: deploy.key, body: {} })).status).toBe(403);
    const scopedManager = await s.mint({ grants: [{ scope: "default", tokens: ["manage:*"] }] });
    expect((await s.call("GET", "/api/credentials", { key: scopedManager.key })).status).toBe(403);
    const reader = await s.mint({ grants: [{ scope: "*", tokens: ["manage:read"] }] });
    expect((await s.call("GET", "/api/credentials", { key: reader.key })).status).toBe(200);
    expect((await s.call("POST", "/api/credentials", { key: reader.key, body: {} })).status).toBe(403);
    const admin = await s.mint({ grants: [{ scope: "*", tokens: ["admin"] }] });
    expect((await s.call("POST", "/api/credentials", { key: admin.key, body: {} })).status).toBe(201);
  });

  it("capabilities need a read right somewhere", async () => {
    const k = await s.mint({ grants: [{ scope: "default", tokens: ["repository:read"] }] });
    const res = await s.call("GET", "/api/capabilities", { key: k.key });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ auth: true, readOnly: false, anonymousRights: null });
  });
});

describe("the credential lifecycle through the API", () => {
  it("mints a key with id, key and a 90-day expiry, and never lists the secret", async () => {
    const before = Date.now();
    const res = await s.call("POST", "/api/credentials", { key: s.bootstrapKey, body: { label: "ci runner" } });
    expect(res.status).toBe(201);
    const body = (await res.json()) as { id: string; key: string; expires: string };
    expect(body.key).toMatch(/^svck_default\.[A-Za-z0-9_-]{49}$/);
    expect(body.id).toBe(keyId(body.key));
    const days = (Date.parse(body.expires) - before) / 86_400_000;
    expect(days).toBeGreaterThan(89.99);
    expect(days).toBeLessThan(90.01);

    const list = await s.call("GET", "/api/credentials", { key: s.bootstrapKey });
    const text = await list.text();
    expect(text).toContain(body.id);
    expect(text).toContain("ci runner");
    expect(text).not.toContain(body.key);
    expect(text).not.toContain(s.bootstrapKey);
    expect(text).not.toMatch(/svck_/);
  });

  it("takes an expiry as a duration or an instant, or none with nonExpiring", async () => {
    const d = (await (await s.call("POST", "/api/credentials", { key: s.bootstrapKey, body: { expires: "P7D" } })).json()) as { expires: string };
    expect(Math.round((Date.parse(d.expires) - Date.now()) / 86_400_000)).toBe(7);
    const i = (await (await s.call("POST", "/api/credentials", { key: s.bootstrapKey, body: { expires: "2031-05-01T00:00:00Z" } })).json()) as { expires: string };
    expect(i.expires).toBe("2031-05-01T00:00:00.000Z");
    const n = (await (await s.call("POST", "/api/credentials", { key: s.bootstrapKey, body: { nonExpiring: true } })).json()) as { expires: string | null };
    expect(n.expires).toBeNull();
  });

  it("an expired key is refused with 401", async () => {
    const k = await s.mint({ expires: "PT2S", grants: [{ scope: "*", tokens: ["*"] }] });
    expect((await s.call("GET", "/api/credentials", { key: k.key })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 2300));
    const res = await s.call("GET", "/api/credentials", { key: k.key });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/expired/);
  });

  it("a revoked key stops working at once on this node, even while cached", async () => {
    const k = await s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
    const path = "/repository/default/libs/com/acme/app.jar";
    expect((await s.call("GET", path, { key: k.key })).status).toBe(200);
    const del = await s.call("DELETE", `/api/credentials/${k.id}`, { key: s.bootstrapKey });
    expect(del.status).toBe(204);
    const res = await s.call("GET", path, { key: k.key });
    expect(res.status).toBe(401);
    expect(await res.text()).toMatch(/revoked/);
    const listed = (await (await s.call("GET", "/api/credentials", { key: s.bootstrapKey })).json()) as { id: string; state: string }[];
    expect(listed.find((c) => c.id === k.id)?.state).toBe("revoked");
  });

  it("narrowing a key's grants is effective at once on this node", async () => {
    const k = await s.mint({ grants: [{ scope: "*", tokens: ["deploy"] }] });
    expect((await s.call("PUT", "/repository/default/narrow/a.txt", { key: k.key, body: "a" })).status).toBe(201);
    const set = await s.call("POST", `/api/credentials/${k.id}/grants`, { key: s.bootstrapKey, body: { scope: "*", tokens: ["read-only"] } });
    expect(set.status).toBe(200);
    expect(await set.json()).toEqual({ scope: "*", tokens: ["cache:read", "repository:read"], expires: null });
    expect((await s.call("PUT", "/repository/default/narrow/a.txt", { key: k.key, body: "b" })).status).toBe(403);
    expect((await s.call("GET", "/repository/default/narrow/a.txt", { key: k.key })).status).toBe(200);
  });

  it("removes a grant by its scope, percent-encoded as one segment or with literal slashes", async () => {
    const k = await s.mint({
      grants: [
        { scope: "default:libs/com/acme", tokens: ["read-only"] },
        { scope: "*", tokens: ["repository:read"] },
      ],
    });
    const enc = await s.call("DELETE", `/api/credentials/${k.id}/grants/${encodeURIComponent("default:libs/com/acme")}`, { key: s.bootstrapKey });
    expect(enc.status).toBe(204);
    const star = await s.call("DELETE", `/api/credentials/${k.id}/grants/*`, { key: s.bootstrapKey });
    expect(star.status).toBe(204);
    const again = await s.call("DELETE", `/api/credentials/${k.id}/grants/*`, { key: s.bootstrapKey });
    expect(again.status).toBe(404);
    const k2 = await s.mint({ grants: [{ scope: "default:a/b", tokens: ["read-only"] }] });
    expect((await s.call("DELETE", `/api/credentials/${k2.id}/grants/default:a/b`, { key: s.bootstrapKey })).status).toBe(204);
    const listed = (await (await s.call("GET", "/api/credentials", { key: s.bootstrapKey })).json()) as { id: string; grants: unknown[] }[];
    expect(listed.find((c) => c.id === k.id)?.grants).toEqual([]);
    expect(listed.find((c) => c.id === k2.id)?.grants).toEqual([]);
  });

  it("a lapsed grant stops only its own scope", async () => {
    const k = await s.mint({
      grants: [
        { scope: "*", tokens: ["repository:read"], expires: "PT2S" },
        { scope: "default", tokens: ["repository:read"] },
      ],
    });
    const path = "/repository/default/libs/com/acme/app.jar";
    expect((await s.call("GET", path, { key: k.key })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 2300));
    expect((await s.call("GET", path, { key: k.key })).status).toBe(403);
    expect((await s.call("GET", path, { key: k.key, headers: { "service-repository-name": "default" } })).status).toBe(200);
  });

  it("refuses bad input with 400 naming the field, and changes nothing", async () => {
    const k = await s.mint();
    const before = await (await s.call("GET", "/api/credentials", { key: s.bootstrapKey })).text();
    const cases: [string, string, object, string][] = [
      ["POST", "/api/credentials", { label: "x", colour: "red" }, "colour"],
      ["POST", "/api/credentials", { expires: "next week" }, "expires"],
      ["POST", "/api/credentials", { expires: "2001-01-01T00:00:00Z" }, "expires"],
      ["POST", `/api/credentials/${k.id}/grants`, { scope: "default", tokens: ["repository:delete"] }, "tokens"],
      ["POST", `/api/credentials/${k.id}/grants`, { scope: "bad scope", tokens: ["read-only"] }, "scope"],
      ["POST", `/api/credentials/${k.id}/grants`, { scope: "default:a/../b", tokens: ["read-only"] }, "scope"],
      ["POST", `/api/credentials/${k.id}/grants`, { scope: "default", tokens: [] }, "tokens"],
      ["POST", `/api/credentials/${k.id}/grants`, { scope: "default", tokens: ["read-only"], expires: "soon" }, "expires"],
      ["POST", `/api/credentials/${k.id}/grants`, { scope: "default" }, "tokens"],
    ];
    for (const [method, path, body, field] of cases) {
      const res = await s.call(method, path, { key: s.bootstrapKey, body });
      expect(res.status, `${path} ${JSON.stringify(body)}`).toBe(400);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      const p = (await res.json()) as { field: string; title: string; reference?: string };
      expect(p.field).toBe(field);
      expect(p.reference).toBeUndefined();
    }
    const bad = await s.call("POST", "/api/credentials", { key: s.bootstrapKey, body: "{not json", headers: { "content-type": "application/json" } });
    expect(bad.status).toBe(400);
    const after = await (await s.call("GET", "/api/credentials", { key: s.bootstrapKey })).text();
    expect(after).toBe(before);
  });

  it("answers 404 for an unknown credential id", async () => {
    const unknown = "0".repeat(64);
    expect((await s.call("DELETE", `/api/credentials/${unknown}`, { key: s.bootstrapKey })).status).toBe(404);
    expect((await s.call("POST", `/api/credentials/${unknown}/grants`, { key: s.bootstrapKey, body: { scope: "*", tokens: ["*"] } })).status).toBe(404);
    expect((await s.call("DELETE", `/api/credentials/${unknown}/grants/*`, { key: s.bootstrapKey })).status).toBe(404);
  });

  it("refuses to grant to a revoked key", async () => {
    const k = await s.mint();
    await s.call("DELETE", `/api/credentials/${k.id}`, { key: s.bootstrapKey });
    const res = await s.call("POST", `/api/credentials/${k.id}/grants`, { key: s.bootstrapKey, body: { scope: "*", tokens: ["*"] } });
    expect(res.status).toBe(409);
  });
});
