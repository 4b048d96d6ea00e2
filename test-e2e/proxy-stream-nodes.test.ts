import { createHash, randomBytes } from "node:crypto";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Replica } from "@svc/devstack/service-runner";
import { startSuite, type Suite } from "./suite.js";

/** The held end of each file the upstream sends: kept back until the test releases it. */
const HELD = 256 * 1024;

/**
 * An upstream on 127.0.0.1 that counts the GETs of each path and sends a file's bytes all but
 * its last HELD while the file is held, the rest once the test releases it (X-Checksum-Sha256
 * and Content-Length declared up front, as this server's own answers declare them).
 */
async function slowUpstream(files: Record<string, Buffer>, wrongDigest: readonly string[]) {
  const gets = new Map<string, number>();
  const held = new Set<string>();
  const waiting = new Map<string, (() => void)[]>();
  const finished = new Set<string>();
  const server: Server = createServer((req, res: ServerResponse) => {
    const path = req.url ?? "/";
    gets.set(path, (gets.get(path) ?? 0) + 1);
    const body = files[path];
    if (!body) return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(body.length), "x-checksum-sha256": createHash("sha256").update(wrongDigest.includes(path) ? "not it" : body).digest("hex") });
    const rest = () => {
      res.end(body.subarray(body.length - HELD), () => finished.add(path));
    };
    res.write(body.subarray(0, body.length - HELD));
    if (held.has(path)) waiting.set(path, [...(waiting.get(path) ?? []), rest]);
    else rest();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    gets: (path: string) => gets.get(path) ?? 0,
    finished: (path: string) => finished.has(path),
    hold: (path: string) => void held.add(path),
    release(path: string) {
      held.delete(path);
      for (const send of waiting.get(path) ?? []) send();
      waiting.delete(path);
    },
    stop: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** A GET whose body is read as it arrives: the bytes so far, and the whole body (or the failure) at its end. */
async function reading(url: string, key: string) {
  const res = await fetch(url, { headers: { "service-repository-key": key, "service-repository-name": "raw-proxy" } });
  const chunks: Buffer[] = [];
  let received = 0;
  const reader = res.body!.getReader();
  const whole = (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return Buffer.concat(chunks);
      chunks.push(Buffer.from(value));
      received += value.length;
    }
  })();
  whole.catch(() => {});
  return { status: res.status, received: () => received, whole };
}

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");

/** `p`, or a failure naming `what` if it has not settled within `ms` (a bound on a wait, not a measurement). */
const within = <T>(p: Promise<T>, what: string, ms: number): Promise<T> =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms).unref())]);

/**
 * A raw proxy repository served by two artifacts nodes, each behind a gateway of its own, in
 * front of an upstream that sends a large file slowly: a client on the node that does not fetch
 * the file gets its bytes as they arrive, relayed from the node that does (one upstream fetch);
 * when that node dies mid-fetch, the other fetches the file itself and its client still gets
 * every byte.
 */
describe("proxy fetches streamed across artifacts nodes", () => {
  let s: Suite;
  let upstream: Awaited<ReturnType<typeof slowUpstream>>;
  let other: Replica | undefined;
  let otherGateway: { url: string; stop: () => Promise<void> } | undefined;
  let reader: string;
  const files = { "/big-1.bin": randomBytes(4 * 1024 * 1024), "/big-2.bin": randomBytes(4 * 1024 * 1024), "/bad.bin": randomBytes(4 * 1024 * 1024), "/big-3.bin": randomBytes(1024 * 1024), "/ping.txt": Buffer.from("pong") };

  beforeAll(async () => {
    // bad.bin's upstream declares a digest its bytes do not have.
    upstream = await slowUpstream(files, ["/bad.bin"]);
    s = await startSuite();
    const admin = s.bootstrapKey;
    expect((await s.call("PUT", "/api/settings/block-private-import-hosts", { key: admin, body: { value: false } })).status).toBe(200);
    // Applied by the artifacts service within moments (it follows the stored settings).
    let last = "";
    await vi
      .waitUntil(
        async () => {
          const r = await s.call("POST", "/api/repositories", { key: admin, body: { name: "raw-proxy", format: "raw", type: "proxy", upstream: { url: upstream.url } } });
          last = `${r.status} ${await r.text()}`;
          return r.status === 201;
        },
        { timeout: 30_000, interval: 300 },
      )
      .catch(() => expect.fail(`the proxy repository was not created: ${last}`));
    reader = (await s.mint({ label: "reader", grants: [{ scope: "raw-proxy", tokens: ["read-only"] }] })).key;
    const replica = await s.startReplica("artifacts");
    other = replica;
    otherGateway = await s.startGateway({ SVC_ARTIFACTS_URL: replica.url });
    // The second node reads the repository list every 5 s: it serves the proxy once it has.
    await vi
      .waitUntil(
        async () => {
          const r = await fetch(`${otherGateway!.url}/repository/raw-proxy/ping.txt`, { headers: { "service-repository-key": reader, "service-repository-name": "raw-proxy" } });
          last = `${r.status} ${await r.text()}`;
          return r.status === 200;
        },
        { timeout: 30_000, interval: 500 },
      )
      .catch(() => expect.fail(`the second node does not serve the proxy repository: ${last}\n${other!.output().slice(-20).join("\n")}`));
  }, 300_000);
  afterAll(async () => {
    await otherGateway?.stop();
    await other?.stop();
    await s?.stop();
    await upstream?.stop();
  });

  it("a client on another node gets the file's first bytes while the upstream still holds its end; one upstream fetch, the same bytes for both", async () => {
    const path = "/big-1.bin";
    upstream.hold(path);
    try {
      const onFetching = await reading(`${s.gatewayUrl}/repository/raw-proxy${path}`, reader);
      expect(onFetching.status).toBe(200);
      await vi.waitUntil(() => upstream.gets(path) === 1, { timeout: 30_000, interval: 50 });
      // Bounded under the upstream's 30 s idle limit: the held end must reach the fetching node before it gives up.
      const onOther = await within(reading(`${otherGateway!.url}/repository/raw-proxy${path}`, reader), "the other node's answer", 20_000);
      expect(onOther.status).toBe(200);
      await within(vi.waitUntil(() => onOther.received() > 0, { timeout: 20_000, interval: 20 }), "the other node's first bytes", 20_000);
      expect(upstream.finished(path)).toBe(false);
      upstream.release(path);
      const [a, b] = await Promise.all([onFetching.whole, onOther.whole]);
      expect(sha256(a)).toBe(sha256(files[path]));
      expect(sha256(b)).toBe(sha256(files[path]));
      expect(upstream.gets(path)).toBe(1);
    } finally {
      upstream.release(path);
    }
    // Stored: both nodes serve it without asking the upstream again.
    const again = await fetch(`${otherGateway!.url}/repository/raw-proxy${path}`, { headers: { "service-repository-key": reader, "service-repository-name": "raw-proxy" } });
    expect(again.headers.get("x-checksum-sha256")).toBe(sha256(files[path]));
    expect(sha256(Buffer.from(await again.arrayBuffer()))).toBe(sha256(files[path]));
    expect(upstream.gets(path)).toBe(1);
  });

  it("the route a node streams its fetches to the others on is not reachable through the gateway, nor without the internal signature", async () => {
    // A fetch under way, so that its id is real.
    const path = "/big-3.bin";
    upstream.hold(path);
    try {
      const onFetching = await reading(`${s.gatewayUrl}/repository/raw-proxy${path}`, reader);
      await vi.waitUntil(() => upstream.gets(path) === 1, { timeout: 30_000, interval: 50 });
      const db = new pg.Client({ connectionString: s.databaseUrl });
      await db.connect();
      let id = "";
      try {
        // Recorded once its bytes flow.
        await vi.waitUntil(async () => (id = (await db.query("select fetch_id from artifacts.proxy_fetch_streams where path = $1", [path.slice(1)])).rows[0]?.fetch_id ?? ""), { timeout: 30_000, interval: 50 });
      } finally {
        await db.end();
      }
      expect((await s.call("GET", `/internal/proxy-fetches/${id}`, { key: s.bootstrapKey })).status).toBe(404);
      expect((await fetch(`${s.urls.artifacts}/internal/proxy-fetches/${id}`)).status).toBe(401);
      upstream.release(path);
      expect(sha256(await onFetching.whole)).toBe(sha256(files[path]));
    } finally {
      upstream.release(path);
    }
  });

  it("a file that turns out not to match its declared digest breaks off the client streaming it on another node too, stores nothing, is not fetched again for it; a retry there is a clean 502", async () => {
    const path = "/bad.bin";
    upstream.hold(path);
    try {
      const onFetching = await reading(`${s.gatewayUrl}/repository/raw-proxy${path}`, reader);
      await vi.waitUntil(() => upstream.gets(path) === 1, { timeout: 30_000, interval: 50 });
      const onOther = await within(reading(`${otherGateway!.url}/repository/raw-proxy${path}`, reader), "the other node's answer", 20_000);
      expect(onOther.status).toBe(200);
      await within(vi.waitUntil(() => onOther.received() > 0, { timeout: 20_000, interval: 20 }), "the other node's first bytes", 20_000);
      upstream.release(path);
      await expect(onFetching.whole).rejects.toThrow();
      await expect(onOther.whole).rejects.toThrow();
      // The other node's own wait for the fetch ended with the fetch's failure: it did not fetch the file again.
      expect(upstream.gets(path)).toBe(1);
    } finally {
      upstream.release(path);
    }
    const retry = await fetch(`${otherGateway!.url}/repository/raw-proxy${path}`, { headers: { "service-repository-key": reader, "service-repository-name": "raw-proxy" } });
    expect(retry.status).toBe(502);
    expect(await retry.text()).toMatch(/does not match the digest/);
    expect(upstream.gets(path)).toBe(2);
  });

  it("when the node fetching the file is killed mid-way, a client streaming it on the other node still gets every byte: that node fetches it itself and sends the rest", async () => {
    const path = "/big-2.bin";
    upstream.hold(path);
    try {
      // The second node fetches this time; the first node's client streams from it.
      const onDoomed = await reading(`${otherGateway!.url}/repository/raw-proxy${path}`, reader);
      expect(onDoomed.status).toBe(200);
      await vi.waitUntil(() => upstream.gets(path) === 1, { timeout: 30_000, interval: 50 });
      const onSurvivor = await within(reading(`${s.gatewayUrl}/repository/raw-proxy${path}`, reader), "the surviving node's answer", 20_000);
      expect(onSurvivor.status).toBe(200);
      await within(vi.waitUntil(() => onSurvivor.received() > 0, { timeout: 20_000, interval: 20 }), "the surviving node's first bytes", 20_000);
      await other!.stop("SIGKILL");
      await expect(onDoomed.whole).rejects.toThrow();
      upstream.release(path);
      const got = await onSurvivor.whole;
      expect(got.length).toBe(files[path].length);
      expect(sha256(got)).toBe(sha256(files[path]));
      // The killed node's fetch, and the surviving node's own once the killed node's lock went with it.
      expect(upstream.gets(path)).toBe(2);
    } finally {
      upstream.release(path);
    }
    const stored = await s.call("GET", `/repository/raw-proxy${path}`, { key: reader, headers: { "service-repository-name": "raw-proxy" } });
    expect(stored.headers.get("x-checksum-sha256")).toBe(sha256(files[path]));
  });
});
