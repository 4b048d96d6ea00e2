// Each prefix of the route table reaches its own upstream, the longest prefix winning, through a
// gateway in open mode in front of one stand-in server per upstream service.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pino from "pino";
import type { FastifyInstance } from "fastify";
import { addressMatcher, verifyIdentity } from "@svc/kit";
import { buildApp } from "../app.js";
import { accessPolicy } from "../domain/admission.js";
import { rightsCacheFactory } from "../domain/rights-cache.js";
import type { Upstreams } from "./route-table.js";

const secret = "route-table-secret";
const names = ["auth", "artifacts", "admin", "walker", "notifier", "console"] as const;
const servers: Server[] = [];
let gateway: FastifyInstance;
let base = "";

beforeAll(async () => {
  const upstreams = {} as Upstreams;
  for (const name of names) {
    const server = createServer((req, res) => {
      const signed = verifyIdentity(secret, req.method ?? "", req.url ?? "", req.headers).ok;
      const cookie = req.headers.cookie ? ` cookie=${req.headers.cookie}` : "";
      res.end(`${name} ${req.method} ${req.url} ${signed ? "signed" : "unsigned"}${cookie}`);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    servers.push(server);
    upstreams[name] = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }
  gateway = buildApp({
    log: pino({ level: "silent" }),
    tenant: "default",
    internalSecret: secret,
    policy: accessPolicy({ auth: false, readOnly: false, anonymousRights: [] }),
    cache: rightsCacheFactory({ ttlMs: 0, lookup: async () => null }),
    upstreams,
    checks: [],
    trustedProxies: addressMatcher([]),
  });
  await gateway.listen({ host: "127.0.0.1", port: 0 });
  base = `http://127.0.0.1:${(gateway.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await gateway?.close();
  for (const s of servers) await new Promise((r) => s.close(r));
});

describe("the route table", () => {
  const expected: [string, string, string][] = [
    ["GET", "/repository/default/a/b.jar", "artifacts"],
    ["PUT", "/repository/default/a/b.jar", "artifacts"],
    ["GET", "/api/repositories", "artifacts"],
    ["GET", "/api/repositories/default/limits", "artifacts"],
    ["GET", "/api/formats", "artifacts"],
    ["GET", "/v2/", "artifacts"],
    ["GET", "/v2/oci/team/app/blobs/sha256:abc", "artifacts"],
    ["PATCH", "/v2/oci/team/app/blobs/uploads/0b6b4c4e", "artifacts"],
    ["PUT", "/v2/oci/team/app/manifests/latest", "artifacts"],
    ["GET", "/api/credentials", "auth"],
    ["DELETE", "/api/credentials/abc", "auth"],
    ["GET", "/api/me", "auth"],
    ["GET", "/api/meta", "admin"],
    ["GET", "/api/principals/oidc/x", "auth"],
    ["GET", "/api/groups", "auth"],
    ["GET", "/api/walks/retention", "walker"],
    ["GET", "/api/webhooks", "notifier"],
    ["GET", "/api/capabilities", "admin"],
    ["GET", "/api/credentialsx", "admin"],
    ["GET", "/api", "admin"],
    ["GET", "/metrics", "admin"],
    ["GET", "/ui/", "console"],
    ["GET", "/ui/assets/pages/posture.js", "console"],
    ["GET", "/login", "console"],
    ["GET", "/login/oauth2/code/oidc?code=c&state=s", "console"],
    ["POST", "/login/dev", "console"],
    ["POST", "/logout", "console"],
    ["GET", "/favicon.ico", "console"],
  ];

  for (const [method, path, upstream] of expected) {
    it(`sends ${method} ${path} to ${upstream}, path unchanged and signed`, async () => {
      const res = await fetch(base + path, { method, body: method === "PUT" ? "x" : undefined });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(`${upstream} ${method} ${path} signed`);
    });
  }

  it("forwards nothing outside the table", async () => {
    expect((await fetch(`${base}/elsewhere`)).status).toBe(404);
  });

  it("forwards the session cookie to the console, and to no other upstream", async () => {
    const cookie = { cookie: "svc_session=abc; other=1" };
    expect(await (await fetch(`${base}/ui/`, { headers: cookie })).text()).toBe("console GET /ui/ signed cookie=svc_session=abc; other=1");
    expect(await (await fetch(`${base}/login/dev`, { method: "POST", headers: cookie })).text()).toBe("console POST /login/dev signed cookie=svc_session=abc; other=1");
    for (const path of ["/api/credentials", "/api/capabilities", "/repository/default/a/b.jar", "/metrics"]) {
      expect(await (await fetch(base + path, { headers: cookie })).text()).not.toMatch(/cookie=/);
    }
  });

  it("sends / to the console for a browser, and answers any other client as before the console", async () => {
    const browser = { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", cookie: "svc_session=abc" };
    const home = await fetch(`${base}/`, { headers: browser });
    expect(await home.text()).toBe("console GET / signed cookie=svc_session=abc");
    const before = await fetch(`${base}/elsewhere`, { headers: { accept: "application/json" } });
    for (const accept of ["application/json", "*/*", "text/html;q=0", ""]) {
      const res = await fetch(`${base}/`, { headers: accept ? { accept } : {} });
      expect(res.status).toBe(404);
      expect(res.headers.get("content-type")).toBe(before.headers.get("content-type"));
      expect(await res.text()).not.toMatch(/^console/);
    }
    expect((await fetch(`${base}/`, { method: "POST", headers: browser })).status).toBe(404);
  });
});
