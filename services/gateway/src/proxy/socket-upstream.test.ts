// The gateway in front of an upstream that listens on a Unix domain socket only (svc.socket),
// named `unix:<path>` as its upstream URL: every transport reaches it there.
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import type { FastifyInstance } from "fastify";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBaseApp, listenOnSocket, type ServiceApp, type SocketListener } from "@svc/kit";
import { testGateway } from "./test-gateway.js";

const secret = "s".repeat(32);
const dir = mkdtempSync(join(tmpdir(), "svc-sock-"));
const socketPath = join(dir, "artifacts.sock");
const file = randomBytes(5 * 1024 * 1024 + 3);
const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const stored = new Map<string, string>();

let key = "";
let upstream: ServiceApp;
let listener: SocketListener;
let gateway: FastifyInstance;
let port = 0;

function send(method: string, path: string, body?: Buffer): Promise<{ status: number; body: Buffer; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { "service-repository-key": key };
    if (body) headers["content-length"] = String(body.length);
    const req = httpRequest({ host: "127.0.0.1", port, method, path, headers }, (res) => {
      const parts: Buffer[] = [];
      res.on("data", (d: Buffer) => parts.push(d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts), headers: res.headers }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

beforeAll(async () => {
  upstream = createBaseApp({ log: pino({ level: "silent" }), internalSecret: secret });
  upstream.get("/api/credentials", async () => ({ items: [], over: "socket" }));
  upstream.register(async (raw) => {
    raw.removeAllContentTypeParsers();
    raw.addContentTypeParser("*", (_req, payload, done) => done(null, payload));
    raw.get("/repository/*", async (_req, reply) => reply.header("content-type", "application/octet-stream").send(file));
    raw.put("/repository/*", async (req, reply) => {
      const hash = createHash("sha256");
      for await (const c of (req.body as Readable | undefined) ?? req.raw) hash.update(c as Buffer);
      stored.set(req.url, hash.digest("hex"));
      return reply.code(201).send({ stored: true });
    });
  });
  // No TCP port at all: what reaches it came over the socket.
  await upstream.ready();
  listener = await listenOnSocket(upstream, socketPath);
  ({ app: gateway, key } = testGateway(`unix:${socketPath}`, secret));
  await gateway.listen({ host: "127.0.0.1", port: 0 });
  port = (gateway.server.address() as AddressInfo).port;
});

afterAll(async () => {
  await gateway?.close();
  await listener?.close();
  await upstream?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("an upstream reached over a Unix domain socket", () => {
  it("serves a download whole (the download pool), and a HEAD (the undici pool)", async () => {
    const got = await send("GET", "/repository/default/big.bin");
    expect(got.status).toBe(200);
    expect(got.body.length).toBe(file.length);
    expect(sha(got.body)).toBe(sha(file));
    const head = await send("HEAD", "/repository/default/big.bin");
    expect(head.status).toBe(200);
    expect(head.headers["content-length"]).toBe(String(file.length));
  });

  it("takes an upload, streamed with its digest in a trailer or small and whole, signed as through TCP", async () => {
    const big = randomBytes(2 * 1024 * 1024);
    expect((await send("PUT", "/repository/default/up/big.bin", big)).status).toBe(201);
    expect(stored.get("/repository/default/up/big.bin")).toBe(sha(big));
    const small = randomBytes(1000);
    expect((await send("PUT", "/repository/default/up/small.bin", small)).status).toBe(201);
    expect(stored.get("/repository/default/up/small.bin")).toBe(sha(small));
  });

  it("forwards an API call", async () => {
    const got = await send("GET", "/api/credentials");
    expect(got.status).toBe(200);
    expect(JSON.parse(got.body.toString())).toEqual({ items: [], over: "socket" });
  });
});
