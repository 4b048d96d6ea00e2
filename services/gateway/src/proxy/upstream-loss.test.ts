// The service behind the gateway going away mid-request (killed, restarted): every client gets a
// prompt answer that says so (502 or 503 with Retry-After and the failure's reference), never a
// reset, a 500 or a wait for some timeout, whatever it was sending or reading.
import { createServer, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testGateway } from "./test-gateway.js";

const secret = "s".repeat(32);
let upstream: Server;
let gateway: FastifyInstance;
let down: FastifyInstance;
let impatient: FastifyInstance;
let impatientKey = "";
let key = "";
let downKey = "";

/** Dies as a killed process does: its connection reset, nothing answered. */
const die = (socket: import("node:net").Socket) => socket.resetAndDestroy();

beforeAll(async () => {
  upstream = createServer((req, res) => {
    if (req.url?.includes("die-mid-body")) {
      let got = 0;
      req.on("data", (c: Buffer) => {
        got += c.length;
        if (got >= 256 * 1024) die(req.socket);
      });
      return;
    }
    if (req.url?.includes("die-at-once")) return die(req.socket);
    if (req.url?.includes("hang")) return; // hung: the request read, nothing ever answered
    req.resume();
    req.on("end", () => res.writeHead(200, { "content-length": "2" }).end("ok"));
  });
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
  ({ app: gateway, key } = testGateway(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, secret));
  await gateway.listen({ host: "127.0.0.1", port: 0 });
  // The same upstream behind a gateway that waits 300 ms for a download's answer (60 s in service).
  ({ app: impatient, key: impatientKey } = testGateway(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, secret, { upstreamSilenceMs: 300 }));
  await impatient.listen({ host: "127.0.0.1", port: 0 });
  // A gateway whose upstream is not running at all: a port that was just free.
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
  const free = (probe.address() as AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  ({ app: down, key: downKey } = testGateway(`http://127.0.0.1:${free}`, secret));
  await down.listen({ host: "127.0.0.1", port: 0 });
});

afterAll(async () => {
  await gateway?.close();
  await down?.close();
  await impatient?.close();
  await new Promise<void>((r) => upstream?.close(() => r()));
});

/**
 * A client that sends its whole request, body included, before it reads a byte of the answer
 * (as Python's requests and many scripts do), then reads until the gateway closes.
 */
function sendAllThenRead(port: number, head: string, body: Buffer): Promise<{ sentWhole: boolean; answer: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let answer = "";
    let sentWhole = false;
    socket.setEncoding("latin1");
    socket.pause();
    socket.on("error", (err) => (sentWhole ? resolve({ sentWhole, answer }) : reject(err)));
    socket.on("connect", async () => {
      const chunk = 64 * 1024;
      socket.write(head);
      for (let at = 0; at < body.length; at += chunk) {
        if (!socket.write(body.subarray(at, at + chunk))) await new Promise((r) => socket.once("drain", r));
      }
      sentWhole = true;
      socket.on("data", (d: string) => (answer += d));
      socket.on("end", () => resolve({ sentWhole, answer }));
      socket.resume();
    });
  });
}

const statusOf = (answer: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);

describe("an upstream that goes away", () => {
  it("mid-upload: the client that sends its whole body first still reads a 502 with Retry-After and a reference", async () => {
    const port = (gateway.server.address() as AddressInfo).port;
    const body = Buffer.alloc(64 * 1024 * 1024, 7);
    const head = `PUT /repository/default/die-mid-body/app.jar HTTP/1.1\r\nhost: 127.0.0.1\r\nservice-repository-key: ${key}\r\ncontent-length: ${body.length}\r\n\r\n`;
    const { sentWhole, answer } = await sendAllThenRead(port, head, body);
    expect(sentWhole).toBe(true);
    expect(statusOf(answer)).toBe(502);
    expect(answer).toMatch(/\r\nretry-after: 5\r\n/i);
    expect(answer).toMatch(/closed its connection before answering/);
    expect(answer).toMatch(/Reference: [A-Za-z0-9]{12}/);
  });

  it("before answering a small write or a download: 502 with Retry-After in the surface's format, never a 500", async () => {
    const base = `http://127.0.0.1:${(gateway.server.address() as AddressInfo).port}`;
    const small = await fetch(`${base}/repository/default/die-at-once/app.pom`, { method: "PUT", headers: { "service-repository-key": key }, body: "<project/>" });
    expect(small.status).toBe(502);
    expect(small.headers.get("retry-after")).toBe("5");
    expect(await small.text()).toMatch(/Reference: [A-Za-z0-9]{12}/);
    const download = await fetch(`${base}/repository/default/die-at-once/app.jar`, { headers: { "service-repository-key": key } });
    expect(download.status).toBe(502);
    expect(download.headers.get("retry-after")).toBe("5");
    const api = await fetch(`${base}/api/die-at-once`, { headers: { "service-repository-key": key, accept: "application/json" } });
    expect(api.status).toBe(502);
    expect(await api.json()).toMatchObject({ status: 502, title: "Bad gateway", reference: expect.stringMatching(/^[A-Za-z0-9]{12}$/) });
  });

  it("hung (the request taken, nothing answered): a download ends in 504 with Retry-After and a reference, never a 500", async () => {
    const base = `http://127.0.0.1:${(impatient.server.address() as AddressInfo).port}`;
    const download = await fetch(`${base}/repository/default/hang/app.jar`, { headers: { "service-repository-key": impatientKey } });
    expect(download.status).toBe(504);
    expect(download.headers.get("retry-after")).toBe("5");
    expect(await download.text()).toMatch(/sent nothing in time[\s\S]*Reference: [A-Za-z0-9]{12}/);
  });

  it("not running at all: 503 with Retry-After for downloads, writes and the API", async () => {
    const base = `http://127.0.0.1:${(down.server.address() as AddressInfo).port}`;
    for (const [method, path, body] of [
      ["GET", "/repository/default/a/app.jar", undefined],
      ["PUT", "/repository/default/a/app.pom", "<project/>"],
      ["PUT", "/repository/default/a/app.jar", Buffer.alloc(200 * 1024, 1)],
      ["GET", "/api/posture", undefined],
    ] as const) {
      const res = await fetch(`${base}${path}`, { method, headers: { "service-repository-key": downKey, accept: "application/json" }, body });
      expect([method, path, res.status]).toEqual([method, path, 503]);
      expect(res.headers.get("retry-after")).toBe("5");
      expect(await res.text()).toMatch(/[Rr]eference/);
    }
  });
});
