import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TLSSocket } from "node:tls";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { parseSecret } from "@svc/kit";
import { verify } from "./signature.js";
import { webhookSenderFactory, type Resolver } from "./webhook-sender.js";

/** A self-signed certificate for localhost, 127.0.0.1 and a made-up name, made for this run. */
function selfSigned(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), "notifier-tls-"));
  try {
    execFileSync("openssl", [
      "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
      "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"), "-subj", "/CN=localhost",
      "-addext", "subjectAltName=DNS:localhost,DNS:hooks.example.test,IP:127.0.0.1",
    ], { stdio: "ignore" });
    return { key: readFileSync(join(dir, "key.pem"), "utf8"), cert: readFileSync(join(dir, "cert.pem"), "utf8") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A private CA and a leaf it signed for localhost and 127.0.0.1 (the leaf alone is served, as is usual). */
function privateCa(): { ca: string; key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), "notifier-ca-"));
  const f = (n: string) => join(dir, n);
  try {
    const run = (args: string[]) => execFileSync("openssl", args, { stdio: "ignore" });
    const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    run(["req", "-x509", ...ec, "-days", "1", "-keyout", f("ca.key"), "-out", f("ca.pem"), "-subj", "/CN=private test CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"]);
    run(["req", ...ec, "-keyout", f("leaf.key"), "-out", f("leaf.csr"), "-subj", "/CN=localhost"]);
    writeFileSync(f("ext"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
    run(["x509", "-req", "-in", f("leaf.csr"), "-CA", f("ca.pem"), "-CAkey", f("ca.key"), "-CAcreateserial", "-days", "1", "-out", f("leaf.pem"), "-extfile", f("ext")]);
    return { ca: readFileSync(f("ca.pem"), "utf8"), key: readFileSync(f("leaf.key"), "utf8"), cert: readFileSync(f("leaf.pem"), "utf8") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

interface Seen {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  servername: string | false | null;
}

describe("sending one delivery", () => {
  let tls: { key: string; cert: string };
  let server: Server;
  let port: number;
  let seen: Seen[] = [];
  let connections = 0;
  const SECRET = parseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
  const key = SECRET.ok ? SECRET.key : Buffer.alloc(0);
  const toLocal: Resolver = async () => [{ address: "127.0.0.1", family: 4 }];

  beforeAll(async () => {
    tls = selfSigned();
    server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
      let body = "";
      req.setEncoding("utf8");
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        seen.push({ path: req.url ?? "", headers: req.headers, body, servername: (req.socket as TLSSocket).servername });
        if (req.url === "/redirect") res.writeHead(302, { location: "/elsewhere" }).end();
        else if (req.url === "/broken") res.writeHead(503).end("down for maintenance");
        else if (req.url === "/hang") setTimeout(() => res.writeHead(200).end(), 5000).unref();
        else res.writeHead(204).end();
      });
    });
    server.on("secureConnection", () => connections++);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  beforeEach(() => {
    seen = [];
    connections = 0;
  });

  const sender = (o: { allowInternal: boolean; resolve?: Resolver; trust?: boolean; timeoutMs?: number }) =>
    webhookSenderFactory({ allowInternal: o.allowInternal, timeoutMs: o.timeoutMs ?? 5000, resolve: o.resolve, extraCa: o.trust === false ? undefined : [tls.cert] });

  it("POSTs the body as JSON, signed so that the receiver's check passes", async () => {
    const s = sender({ allowInternal: true });
    const r = await s.send({ url: `https://127.0.0.1:${port}/hook?x=1`, id: "evt-1", body: '{"type":"artifact.published"}', key });
    s.close();
    expect(r).toEqual({ outcome: "delivered", status: 204 });
    const got = seen[0]!;
    expect(got.path).toBe("/hook?x=1");
    expect(got.headers["content-type"]).toBe("application/json");
    expect(got.headers["webhook-id"]).toBe("evt-1");
    const ok = verify(key, { id: "evt-1", timestamp: String(got.headers["webhook-timestamp"]), signature: String(got.headers["webhook-signature"]) }, got.body);
    expect(ok).toBe(true);
  });

  it("connects to the address it checked and still verifies the certificate against the name", async () => {
    const s = sender({ allowInternal: true, resolve: toLocal });
    const r = await s.send({ url: `https://hooks.example.test:${port}/named`, id: "evt-2", body: "{}" });
    s.close();
    expect(r.outcome).toBe("delivered");
    expect(seen[0]?.servername).toBe("hooks.example.test");
    expect(seen[0]?.headers.host).toBe(`hooks.example.test:${port}`);
    expect(seen[0]?.headers["webhook-signature"]).toBeUndefined();
  });

  it("refuses a name that resolves to an internal address and never connects", async () => {
    const s = sender({ allowInternal: false, resolve: toLocal });
    const r = await s.send({ url: `https://hooks.example.test:${port}/named`, id: "evt-3", body: "{}" });
    s.close();
    expect(r).toEqual({ outcome: "refused", error: expect.stringMatching(/^refused: hooks\.example\.test resolves to 127\.0\.0\.1, which is in the loopback range/) });
    expect(connections).toBe(0);
  });

  it("refuses when any one of the resolved addresses is internal, in every forbidden range", async () => {
    const forbidden = [
      "127.0.0.1", "10.1.2.3", "172.16.5.4", "192.168.1.1", "169.254.169.254", "169.254.1.1", "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255",
      "::1", "::", "fc00::1", "fd00:ec2::254", "fe80::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:a9fe:a9fe", "::ffff:10.0.0.1",
    ];
    for (const bad of forbidden) {
      const family = bad.includes(":") ? 6 : 4;
      const s = sender({ allowInternal: false, resolve: async () => [{ address: "93.184.216.34", family: 4 }, { address: bad, family }] });
      const r = await s.send({ url: "https://hooks.example.test/x", id: "e", body: "{}" });
      s.close();
      expect(r.outcome, bad).toBe("refused");
      expect(r.outcome === "refused" && r.error, bad).toContain(`resolves to ${bad}, which is in the`);
    }
    expect(connections).toBe(0);
  });

  it("refuses internal address literals and plain http unless internal addresses are allowed", async () => {
    const s = sender({ allowInternal: false });
    expect(await s.send({ url: `https://127.0.0.1:${port}/x`, id: "e", body: "{}" })).toEqual({ outcome: "refused", error: expect.stringContaining("127.0.0.1 is in the loopback range") });
    expect(await s.send({ url: `https://[::ffff:7f00:1]:${port}/x`, id: "e", body: "{}" })).toMatchObject({ outcome: "refused" });
    expect(await s.send({ url: "http://example.com/x", id: "e", body: "{}" })).toMatchObject({ outcome: "refused" });
    s.close();
    expect(connections).toBe(0);
  });

  it("treats a redirect as a failure and does not follow it", async () => {
    const s = sender({ allowInternal: true });
    const r = await s.send({ url: `https://127.0.0.1:${port}/redirect`, id: "e", body: "{}" });
    s.close();
    expect(r).toEqual({ outcome: "failed", status: 302, error: "HTTP 302: redirect to /elsewhere not followed" });
    expect(seen.map((x) => x.path)).toEqual(["/redirect"]);
  });

  it("records a non-2xx answer with its status and the start of its body", async () => {
    const s = sender({ allowInternal: true });
    const r = await s.send({ url: `https://127.0.0.1:${port}/broken`, id: "e", body: "{}" });
    s.close();
    expect(r).toEqual({ outcome: "failed", status: 503, error: "HTTP 503: down for maintenance" });
  });

  it("gives up on a receiver that does not answer in time", async () => {
    const s = sender({ allowInternal: true, timeoutMs: 300 });
    const r = await s.send({ url: `https://127.0.0.1:${port}/hang`, id: "e", body: "{}" });
    s.close();
    expect(r).toEqual({ outcome: "failed", error: "no answer within 300 ms" });
  });

  it("fails on a certificate it does not trust, and on a name that does not resolve", async () => {
    const s = sender({ allowInternal: true, trust: false });
    const r = await s.send({ url: `https://127.0.0.1:${port}/x`, id: "e", body: "{}" });
    expect(r).toMatchObject({ outcome: "failed", error: expect.stringMatching(/self.signed/i) });
    const missing = webhookSenderFactory({
      allowInternal: false,
      timeoutMs: 1000,
      resolve: async () => {
        throw Object.assign(new Error("getaddrinfo ENOTFOUND"), { code: "ENOTFOUND" });
      },
    });
    expect(await missing.send({ url: "https://nowhere.example.test/x", id: "e", body: "{}" })).toEqual({ outcome: "failed", error: "cannot resolve nowhere.example.test: ENOTFOUND" });
    s.close();
  });
});

describe("a delivery refused by a certificate check says what to do", () => {
  let pki: ReturnType<typeof privateCa>;
  let server: Server;
  let port: number;
  beforeAll(async () => {
    pki = privateCa();
    server = createServer({ key: pki.key, cert: pki.cert }, (_req, res) => res.writeHead(204).end());
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it("an endpoint with a private CA: the error names NODE_EXTRA_CA_CERTS, and trusting the CA delivers", async () => {
    const untrusting = webhookSenderFactory({ allowInternal: true, timeoutMs: 5000 });
    const r = await untrusting.send({ url: `https://127.0.0.1:${port}/x`, id: "e", body: "{}" });
    untrusting.close();
    expect(r).toMatchObject({ outcome: "failed", error: expect.stringMatching(/^UNABLE_TO_VERIFY_LEAF_SIGNATURE: .*NODE_EXTRA_CA_CERTS=<file holding the CA's PEM certificate>/) });
    const trusting = webhookSenderFactory({ allowInternal: true, timeoutMs: 5000, extraCa: [pki.ca] });
    expect(await trusting.send({ url: `https://127.0.0.1:${port}/x`, id: "e", body: "{}" })).toEqual({ outcome: "delivered", status: 204 });
    trusting.close();
  });

  it("a certificate for another name says so, naming the host", async () => {
    const s = webhookSenderFactory({ allowInternal: true, timeoutMs: 5000, extraCa: [pki.ca], resolve: async () => [{ address: "127.0.0.1", family: 4 }] });
    const r = await s.send({ url: `https://hooks.example.test:${port}/x`, id: "e", body: "{}" });
    s.close();
    expect(r).toMatchObject({ outcome: "failed", error: expect.stringMatching(/^ERR_TLS_CERT_ALTNAME_INVALID: .*not issued for hooks\.example\.test/) });
  });
});
