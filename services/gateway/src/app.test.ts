// The gateway's forwarding contract, against a stand-in upstream: what arrives there is signed over
// the exact method and path (with query) it received, and carries no client credentials.
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FastifyInstance } from "fastify";
import { makeKey } from "@svc/keys";
import { verifyIdentity } from "@svc/kit";
import { testGateway } from "./proxy/test-gateway.js";

const secret = "test-internal-secret";
let key = "";
let keyId = "";

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

let upstream: Server;
let gateway: FastifyInstance;
let gatewayPort = 0;
const seen: Seen[] = [];
let upstreamClosedNow: () => void = () => {};
const upstreamClosed = new Promise<void>((r) => (upstreamClosedNow = r));

/** A raw request (no URL normalisation on the client side). */
function send(method: string, path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port: gatewayPort, method, path, headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

beforeAll(async () => {
  upstream = createServer((req, res) => {
    seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers });
    if (req.url === "/repository/default/chunked") {
      // No Content-Length: the download pool cannot delimit it.
      res.write("chunked ");
      return res.end("body");
    }
    if (req.url === "/repository/default/bad-header") {
      // A header value Node refuses to send on.
      return req.socket.end("HTTP/1.1 200 OK\r\nX-Bad: a\u0001b\r\nContent-Length: 2\r\n\r\nok", "latin1");
    }
    if (req.url === "/repository/default/endless") {
      res.writeHead(200, { "content-length": String(1024 * 1024 * 1024) });
      const chunk = Buffer.alloc(64 * 1024);
      const timer = setInterval(() => res.write(chunk), 5);
      res.on("close", () => {
        clearInterval(timer);
        upstreamClosedNow();
      });
      return;
    }
    res.end("ok");
  });
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  ({ app: gateway, key, keyId } = testGateway(url, secret));
  await gateway.listen({ host: "127.0.0.1", port: 0 });
  gatewayPort = (gateway.server.address() as AddressInfo).port;
});

afterAll(async () => {
  await gateway?.close();
  await new Promise((r) => upstream?.close(r));
});

describe("gateway forwarding", () => {
  const paths = [
    "/repository/default/dir/file.bin",
    "/repository/default/dir/file.bin?",
    '/repository/default/dir/file.bin?a="x"&b=<y>',
    "/repository/default/dir/a%20b.bin?q=1&q=2&flag",
    "/api/credentials/" + "a".repeat(64) + "?x=%zz",
  ];

  for (const path of paths) {
    it(`signs exactly what the upstream receives: GET ${path}`, async () => {
      seen.length = 0;
      const res = await send("GET", path, {
        "service-repository-key": key,
        authorization: `Bearer ${key}`,
        cookie: "session=1",
        "x-svc-identity": "system:default:forged",
        "x-svc-identity-ts": "1",
        "x-svc-identity-sig": "forged",
      });
      expect(res.status).toBe(200);
      expect(seen).toHaveLength(1);
      const got = seen[0]!;
      expect(got.url).toBe(path);
      const v = verifyIdentity(secret, got.method, got.url, got.headers);
      expect(v).toMatchObject({ ok: true, principal: { kind: "key", tenant: "default", id: keyId } });
      expect(got.headers["service-repository-key"]).toBeUndefined();
      expect(got.headers.authorization).toBeUndefined();
      expect(got.headers.cookie).toBeUndefined();
    });
  }

  it("passes end-to-end request headers on, and neither hop-by-hop ones nor those Connection names", async () => {
    seen.length = 0;
    const res = await send("GET", "/repository/default/h.bin", {
      "service-repository-key": key,
      connection: "keep-alive, x-hop",
      "x-hop": "1",
      "keep-alive": "timeout=5",
      te: "trailers",
      "proxy-connection": "keep-alive",
      range: "bytes=0-1",
      "if-none-match": '"x"',
      "user-agent": "curl/8",
    });
    expect(res.status).toBe(200);
    const got = seen[0]!.headers;
    for (const name of ["x-hop", "keep-alive", "te", "proxy-connection"]) expect(got[name], name).toBeUndefined();
    expect(got).toMatchObject({ range: "bytes=0-1", "if-none-match": '"x"', "user-agent": "curl/8" });
  });

  it("sends a GET whose answer has no Content-Length again the general way: the client gets it whole", async () => {
    seen.length = 0;
    const res = await send("GET", "/repository/default/chunked", { "service-repository-key": key });
    expect(res).toEqual({ status: 200, body: "chunked body" });
    expect(seen).toHaveLength(2);
    for (const s of seen) expect(verifyIdentity(secret, s.method, s.url, s.headers).ok).toBe(true);
  });

  it("answers 500 with a reference when the upstream's answer cannot be passed on", async () => {
    const res = await send("GET", "/repository/default/bad-header", { "service-repository-key": key });
    expect(res.status).toBe(500);
    expect(res.body).toMatch(/^Unexpected failure\. Reference: [A-Z0-9]{12}\n$/);
  });

  it("closes the upstream connection when the client gives up on a download", async () => {
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest({ host: "127.0.0.1", port: gatewayPort, path: "/repository/default/endless", headers: { "service-repository-key": key } }, (res) => {
        res.once("data", () => {
          req.destroy();
          resolve();
        });
      });
      req.on("error", () => {});
      req.on("close", () => resolve());
      setTimeout(() => reject(new Error("no body arrived")), 5000);
      req.end();
    });
    await upstreamClosed;
  });

  it("refuses before proxying when the key is unknown or absent", async () => {
    seen.length = 0;
    expect((await send("GET", "/repository/default/f.bin", { "service-repository-key": makeKey("default") })).status).toBe(401);
    expect((await send("GET", "/repository/default/f.bin", {})).status).toBe(401);
    expect(seen).toHaveLength(0);
  });
});

describe("request targets: admission decides on the path the router routes on", () => {
  // Each of these is routed (by find-my-way, or the proxy's URL resolution) to a guarded route,
  // though its text does not start like one. None may reach an upstream without a key.
  const disguised = [
    "http://x/api/credentials",
    "https://x/metrics",
    "/%61pi/credentials",
    "/%6detrics",
    "/api#/credentials",
    "/metrics#",
    "/metrics/",
    "/%72epository/default/f.bin",
    "/repository/default/a\\..\\..\\..\\api\\credentials",
  ];
  for (const path of disguised) {
    it(`never forwards GET ${path} without a key`, async () => {
      seen.length = 0;
      const res = await send("GET", path, {});
      expect([400, 401, 404]).toContain(res.status);
      expect(seen).toEqual([]);
    });
  }
});
