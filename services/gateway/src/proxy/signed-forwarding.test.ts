// The gateway in front of a real upstream base app (createBaseApp), which checks every signature,
// binding and replay as in production: what a client sends arrives whole and is accepted.
import { createHash, randomBytes } from "node:crypto";
import { request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import type { FastifyInstance } from "fastify";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBaseApp, type ServiceApp } from "@svc/kit";
import { testGateway } from "./test-gateway.js";

const secret = "s".repeat(32);
let key = "";

let upstream: ServiceApp;
let gateway: FastifyInstance;
let port = 0;
const stored = new Map<string, { sha256: string; type: string | undefined; name: string | undefined }>();

function send(method: string, path: string, headers: Record<string, string>, body?: Buffer | Buffer[]): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, method, path, headers: { "service-repository-key": key, ...headers } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on("error", reject);
    for (const chunk of Buffer.isBuffer(body) ? [body] : (body ?? [])) req.write(chunk);
    req.end();
  });
}

beforeAll(async () => {
  upstream = createBaseApp({ log: pino({ level: "silent" }), internalSecret: secret });
  upstream.post("/api/credentials/:id/grants", async (req) => ({ got: req.body, name: req.headers["service-repository-name"] ?? null }));
  upstream.get("/api/credentials", async () => ({ items: [] }));
  upstream.register(async (raw) => {
    raw.removeAllContentTypeParsers();
    raw.addContentTypeParser("*", (_req, payload, done) => done(null, payload));
    raw.put("/repository/*", async (req, reply) => {
      const hash = createHash("sha256");
      for await (const c of (req.body as Readable | undefined) ?? req.raw) hash.update(c as Buffer);
      const name = req.headers["service-repository-name"];
      stored.set(req.url, { sha256: hash.digest("hex"), type: req.headers["content-type"], name: typeof name === "string" ? name : undefined });
      return reply.code(201).send({ stored: true });
    });
    raw.delete("/repository/*", async (_req, reply) => reply.code(204).send());
    raw.get("/repository/*", async () => "content");
  });
  await upstream.listen({ port: 0, host: "127.0.0.1" });
  const url = `http://127.0.0.1:${(upstream.server.address() as AddressInfo).port}`;
  ({ app: gateway, key } = testGateway(url, secret));
  await gateway.listen({ host: "127.0.0.1", port: 0 });
  port = (gateway.server.address() as AddressInfo).port;
});

afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

describe("forwarding through the gateway to an upstream that checks the signature", () => {
  const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

  it("streams an upload, by length or chunked, and the upstream accepts the digest in its trailer", async () => {
    const big = randomBytes(3 * 1024 * 1024 + 17);
    const byLength = await send("PUT", "/repository/default/a/big.bin", { "content-length": String(big.length), "content-type": "application/java-archive", "service-repository-name": "default" }, big);
    expect(byLength.status).toBe(201);
    expect(stored.get("/repository/default/a/big.bin")).toEqual({ sha256: sha(big), type: "application/java-archive", name: "default" });
    const parts = [randomBytes(1000), randomBytes(70_000), randomBytes(5)];
    const chunked = await send("PUT", "/repository/default/a/chunked.bin", { "transfer-encoding": "chunked", "content-type": "text/plain" }, parts);
    expect(chunked.status).toBe(201);
    expect(stored.get("/repository/default/a/chunked.bin")?.sha256).toBe(sha(Buffer.concat(parts)));
  });

  it("forwards an empty upload and a DELETE without a body", async () => {
    expect((await send("PUT", "/repository/default/a/empty.bin", { "content-length": "0" })).status).toBe(201);
    expect(stored.get("/repository/default/a/empty.bin")?.sha256).toBe(sha(Buffer.alloc(0)));
    expect((await send("DELETE", "/repository/default/a/empty.bin", {})).status).toBe(204);
  });

  it("binds an API body, by length or chunked, and its Service-Repository-Name", async () => {
    const grant = Buffer.from(JSON.stringify({ scope: "default:libs", tokens: ["repository:read"] }));
    const path = `/api/credentials/${"a".repeat(64)}/grants`;
    const a = await send("POST", path, { "content-type": "application/json", "content-length": String(grant.length), "service-repository-name": "default" }, grant);
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body)).toEqual({ got: { scope: "default:libs", tokens: ["repository:read"] }, name: "default" });
    const b = await send("POST", path, { "content-type": "application/json", "transfer-encoding": "chunked" }, [grant.subarray(0, 7), grant.subarray(7)]);
    expect(b.status).toBe(200);
  });

  it("never has a request of its own refused as a replay, however many identical ones run at once", async () => {
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => send(i % 2 ? "HEAD" : "GET", "/repository/default/same.bin", {})));
    expect(results.map((r) => r.status)).toEqual(results.map(() => 200));
    const api = await Promise.all(Array.from({ length: 20 }, () => send("GET", "/api/credentials", {})));
    expect(api.map((r) => r.status)).toEqual(api.map(() => 200));
  });
});
