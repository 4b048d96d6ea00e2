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
const names = ["auth", "artifacts", "admin", "walker", "notifier"] as const;
const servers: Server[] = [];
let gateway: FastifyInstance;
let base = "";

beforeAll(async () => {
  const upstreams = {} as Upstreams;
  for (const name of names) {
    const server = createServer((req, res) => {
      const signed = verifyIdentity(secret, req.method ?? "", req.url ?? "", req.headers).ok;
      res.end(`${name} ${req.method} ${req.url} ${signed ? "signed" : "unsigned"}`);
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
    ["GET", "/api/credentials", "auth"],
    ["DELETE", "/api/credentials/abc", "auth"],
    ["GET", "/api/principals/oidc/x", "auth"],
    ["GET", "/api/groups", "auth"],
    ["GET", "/api/walks/retention", "walker"],
    ["GET", "/api/webhooks", "notifier"],
    ["GET", "/api/capabilities", "admin"],
    ["GET", "/api/credentialsx", "admin"],
    ["GET", "/api", "admin"],
    ["GET", "/metrics", "admin"],
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
});
