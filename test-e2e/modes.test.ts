import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { identityHeaders } from "@svc/kit";
import { keyId } from "@svc/keys";
import { startSuite, type Suite } from "./suite.js";

describe("open mode (svc.auth=false)", () => {
  let s: Suite;
  beforeAll(async () => {
    s = await startSuite({ env: { SVC_AUTH: "false" } });
  });
  afterAll(() => s?.stop());

  it("serves every request anonymously, writes included", async () => {
    expect((await s.call("PUT", "/repository/default/open/a.txt", { body: "open" })).status).toBe(201);
    expect(await (await s.call("GET", "/repository/default/open/a.txt")).text()).toBe("open");
    expect((await s.call("DELETE", "/repository/default/open/a.txt")).status).toBe(204);
    expect((await s.call("GET", "/api/credentials")).status).toBe(200);
  });

  it("warns at boot and advertises it", async () => {
    await s.waitForOutput(/svc\.auth=false: every request is served anonymously/, { service: "gateway" });
    expect(await (await s.call("GET", "/api/capabilities")).json()).toEqual({ auth: false, readOnly: false, anonymousRights: null });
  });
});

describe("public read-only mirror (anonymous read, svc.read-only)", () => {
  let s: Suite;
  beforeAll(async () => {
    s = await startSuite({ env: { SVC_ANONYMOUS_RIGHTS: "repository:read", SVC_READ_ONLY: "true" } });
  });
  afterAll(() => s?.stop());

  it("lets a keyless caller read and advertises both settings", async () => {
    expect((await s.call("GET", "/repository/default/missing.txt")).status).toBe(404);
    const caps = await s.call("GET", "/api/capabilities");
    expect(caps.status).toBe(200);
    expect(await caps.json()).toEqual({ auth: true, readOnly: true, anonymousRights: "repository:read" });
  });

  it("refuses every write with 403, even with a key holding every right", async () => {
    for (const method of ["PUT", "DELETE", "POST"]) {
      const res = await s.call(method, "/repository/default/x.txt", { key: s.bootstrapKey, body: method === "DELETE" ? undefined : "x" });
      expect(res.status, method).toBe(403);
      expect(await res.text()).toMatch(/read-only/);
    }
    const anon = await s.call("PUT", "/repository/default/x.txt", { body: "x" });
    expect(anon.status).toBe(403);
  });

  it("enforces read-only again at the store, so a request inside the deployment cannot bypass it", async () => {
    const path = "/repository/default/inside.txt";
    const headers = identityHeaders(s.internalSecret, "PUT", path, `key:default:${keyId(s.bootstrapKey)}`, Date.now(), {
      body: "inside",
      // What fetch sends with a string body: the signature covers the content type.
      headers: { "content-type": "text/plain;charset=UTF-8" },
    });
    const res = await fetch(`${s.urls.artifacts}${path}`, { method: "PUT", headers, body: "inside" });
    expect(res.status).toBe(403);
  });

  it("keeps /api/ closed to a keyless caller", async () => {
    expect((await s.call("GET", "/api/credentials")).status).toBe(401);
  });
});

describe("anonymous rights for one repository", () => {
  let s: Suite;
  beforeAll(async () => {
    s = await startSuite({ env: { SVC_ANONYMOUS_RIGHTS: "default=repository:read" } });
    await s.call("PUT", "/repository/default/pub.txt", { key: s.bootstrapKey, body: "public" });
  });
  afterAll(() => s?.stop());

  it("reads that repository when the caller names it, and nothing more", async () => {
    expect((await s.call("GET", "/repository/default/pub.txt", { headers: { "service-repository-name": "default" } })).status).toBe(200);
    const unnamed = await s.call("GET", "/repository/default/pub.txt");
    expect(unnamed.status).toBe(401);
    expect(unnamed.headers.get("www-authenticate")).toMatch(/^Basic/);
    const write = await s.call("PUT", "/repository/default/pub.txt", { headers: { "service-repository-name": "default" }, body: "x" });
    expect(write.status).toBe(401);
  });
});
