import { createHash } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { request } from "node:http";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startSuite, type Suite } from "./suite.js";

let s: Suite;
beforeAll(async () => {
  s = await startSuite();
});
afterAll(() => s?.stop());

const key = () => s.bootstrapKey;

/** Memory high-water mark of a process, from /proc. */
function peakRssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1]);
  return kb / 1024;
}

function pidOf(port: string): number {
  // The service listening on the port: find it among our children by its command line and environment.
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const env = readFileSync(`/proc/${entry}/environ`, "utf8");
      if (env.includes(`\0SVC_PORT=${port}\0`) || env.startsWith(`SVC_PORT=${port}\0`)) return Number(entry);
    } catch {
      // gone or not ours
    }
  }
  throw new Error(`no process for port ${port}`);
}

describe("raw artifacts", () => {
  it("stores a file with PUT and returns it with GET and HEAD, with the headers clients rely on", async () => {
    const put = await s.call("PUT", "/repository/default/docs/readme.txt", { key: key(), body: "hello artifacts\n", headers: { "content-type": "text/plain" } });
    expect(put.status).toBe(201);
    const stored = (await put.json()) as { size: number; sha256: string };
    expect(stored.size).toBe(16);
    expect(stored.sha256).toBe(createHash("sha256").update("hello artifacts\n").digest("hex"));

    const get = await s.call("GET", "/repository/default/docs/readme.txt", { key: key() });
    expect(get.status).toBe(200);
    expect(await get.text()).toBe("hello artifacts\n");
    expect(get.headers.get("content-length")).toBe("16");
    expect(get.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(get.headers.get("etag")).toBeTruthy();
    expect(Date.parse(get.headers.get("last-modified") ?? "")).not.toBeNaN();
    expect(get.headers.get("accept-ranges")).toBe("bytes");

    const head = await s.call("HEAD", "/repository/default/docs/readme.txt", { key: key() });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe("16");
    expect(await head.text()).toBe("");
  });

  it("answers a conditional GET with 304", async () => {
    await s.call("PUT", "/repository/default/docs/cond.txt", { key: key(), body: "c" });
    const first = await s.call("GET", "/repository/default/docs/cond.txt", { key: key() });
    const etag = first.headers.get("etag")!;
    // Sent with node:http: fetch adds Cache-Control: no-cache to conditional requests, which forces a full answer.
    const again = await s.rawCall("GET", "/repository/default/docs/cond.txt", { "service-repository-key": key(), "if-none-match": etag });
    expect(again.status).toBe(304);
    const since = await s.rawCall("GET", "/repository/default/docs/cond.txt", { "service-repository-key": key(), "if-modified-since": first.headers.get("last-modified")! });
    expect(since.status).toBe(304);
    const changed = await s.rawCall("GET", "/repository/default/docs/cond.txt", { "service-repository-key": key(), "if-none-match": '"something-else"' });
    expect(changed.status).toBe(200);
  });

  it("serves byte ranges", async () => {
    await s.call("PUT", "/repository/default/docs/range.bin", { key: key(), body: "0123456789" });
    const res = await s.call("GET", "/repository/default/docs/range.bin", { key: key(), headers: { range: "bytes=2-5" } });
    expect(res.status).toBe(206);
    expect(res.headers.get("content-range")).toBe("bytes 2-5/10");
    expect(await res.text()).toBe("2345");
    const tail = await s.call("GET", "/repository/default/docs/range.bin", { key: key(), headers: { range: "bytes=-3" } });
    expect(await tail.text()).toBe("789");
    const beyond = await s.call("GET", "/repository/default/docs/range.bin", { key: key(), headers: { range: "bytes=50-60" } });
    expect(beyond.status).toBe(416);
  });

  it("replaces a file with 200 and removes it with DELETE", async () => {
    expect((await s.call("PUT", "/repository/default/docs/v.txt", { key: key(), body: "one" })).status).toBe(201);
    expect((await s.call("PUT", "/repository/default/docs/v.txt", { key: key(), body: "two" })).status).toBe(200);
    expect(await (await s.call("GET", "/repository/default/docs/v.txt", { key: key() })).text()).toBe("two");
    expect((await s.call("DELETE", "/repository/default/docs/v.txt", { key: key() })).status).toBe(204);
    expect((await s.call("GET", "/repository/default/docs/v.txt", { key: key() })).status).toBe(404);
    expect((await s.call("DELETE", "/repository/default/docs/v.txt", { key: key() })).status).toBe(404);
  });

  it("keeps a JSON body byte for byte (the gateway never re-encodes an upload)", async () => {
    const json = '{ "name":"x",   "version":"1.0.0" }';
    await s.call("PUT", "/repository/default/npm/package.json", { key: key(), body: json, headers: { "content-type": "application/json" } });
    expect(await (await s.call("GET", "/repository/default/npm/package.json", { key: key() })).text()).toBe(json);
  });

  it("takes uploads the way curl and older clients send them: Expect: 100-continue, chunked, hop-by-hop headers", async () => {
    const u = new URL(s.gatewayUrl);
    const upload = (path: string, headers: Record<string, string>, body: string) =>
      new Promise<{ status: number; sawContinue: boolean }>((resolve, reject) => {
        let sawContinue = false;
        const req = request({ host: u.hostname, port: u.port, method: "PUT", path, headers: { "service-repository-key": key(), ...headers } }, (res) => {
          res.resume();
          res.on("end", () => resolve({ status: res.statusCode ?? 0, sawContinue }));
        });
        req.on("error", reject);
        if (headers.expect) {
          // As curl does: the body goes only after the server said to continue.
          req.on("continue", () => {
            sawContinue = true;
            req.end(body);
          });
        } else {
          req.end(body);
        }
      });

    const sized = await upload("/repository/default/clients/expect.txt", { expect: "100-continue", "content-length": "5" }, "hello");
    expect(sized).toEqual({ status: 201, sawContinue: true });
    const chunked = await upload("/repository/default/clients/chunked.txt", { expect: "100-continue", "transfer-encoding": "chunked" }, "streamed");
    expect(chunked).toEqual({ status: 201, sawContinue: true });
    const hopByHop = await upload("/repository/default/clients/hop.txt", { "keep-alive": "timeout=5", te: "trailers", "proxy-connection": "keep-alive" }, "old client");
    expect(hopByHop.status).toBe(201);

    expect(await (await s.call("GET", "/repository/default/clients/expect.txt", { key: key() })).text()).toBe("hello");
    expect(await (await s.call("GET", "/repository/default/clients/chunked.txt", { key: key() })).text()).toBe("streamed");
    expect(await (await s.call("GET", "/repository/default/clients/hop.txt", { key: key() })).text()).toBe("old client");
  });

  it("answers 404 for a missing artifact, a folder and an unknown repository", async () => {
    expect((await s.call("GET", "/repository/default/nothing/here.txt", { key: key() })).status).toBe(404);
    expect((await s.call("GET", "/repository/default/docs", { key: key() })).status).toBe(404);
    const unknown = await s.call("PUT", "/repository/nosuchrepo/a.txt", { key: key(), body: "x" });
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toMatch(/no repository named nosuchrepo/);
  });

  it("answers 409 when a path runs through an existing file", async () => {
    await s.call("PUT", "/repository/default/conflict/file", { key: key(), body: "f" });
    expect((await s.call("PUT", "/repository/default/conflict/file/child", { key: key(), body: "c" })).status).toBe(409);
    expect((await s.call("PUT", "/repository/default/conflict", { key: key(), body: "d" })).status).toBe(409);
  });

  it("refuses paths that escape the repository with 400, encoded or not", async () => {
    await s.call("PUT", "/repository/default/safe.txt", { key: key(), body: "safe" });
    const h = { "service-repository-key": key() };
    for (const path of [
      "/repository/default/../default/safe.txt",
      "/repository/default/a/../../etc/passwd",
      "/repository/default/%2e%2e/etc/passwd",
      "/repository/default/a/%2E%2E/%2e%2e/x",
      "/repository/default/a/.%2e/x",
      "/repository/default/./safe.txt",
      "/repository/default//etc/passwd",
      "/repository/default/a%2f..%2f..%2fetc",
      "/repository/default/a%00b",
      "/repository/default/a\\..\\b",
      "/repository/default/a%5c..%5cb",
      "/repository/default/%zz",
      "/repository/default/",
    ]) {
      for (const method of ["GET", "PUT", "DELETE"]) {
        const res = await s.rawCall(method, path, h);
        expect(res.status, `${method} ${path}`).toBe(400);
        expect(res.body).not.toMatch(/\/tmp|\.data|store|node_modules|at /);
      }
    }
    expect(await (await s.call("GET", "/repository/default/safe.txt", { key: key() })).text()).toBe("safe");
  });

  it("streams a large upload and download without holding them in memory", async () => {
    const size = 512 * 1024 * 1024;
    const chunk = Buffer.alloc(1024 * 1024, 7);
    const hash = createHash("sha256");
    let sent = 0;
    const source = new Readable({
      read() {
        if (sent >= size) return this.push(null);
        sent += chunk.length;
        hash.update(chunk);
        this.push(chunk);
      },
    });
    const put = await s.call("PUT", "/repository/default/big/blob.bin", {
      key: key(),
      body: Readable.toWeb(source) as ReadableStream,
      headers: { "content-type": "application/octet-stream" },
    });
    expect(put.status).toBe(201);
    const stored = (await put.json()) as { size: number; sha256: string };
    expect(stored.size).toBe(size);
    expect(stored.sha256).toBe(hash.digest("hex"));

    const get = await s.call("GET", "/repository/default/big/blob.bin", { key: key() });
    expect(get.headers.get("content-length")).toBe(String(size));
    const down = createHash("sha256");
    let received = 0;
    for await (const part of get.body as unknown as AsyncIterable<Uint8Array>) {
      down.update(part);
      received += part.length;
    }
    expect(received).toBe(size);
    expect(down.digest("hex")).toBe(stored.sha256);

    for (const service of ["gateway", "artifacts"] as const) {
      const peak = peakRssMiB(pidOf(new URL(s.urls[service]).port));
      expect(peak, `${service} peak memory MiB`).toBeLessThan(300);
    }
  });
});

describe("durability", () => {
  it("keeps what it answered 2xx for across a restart of every service", async () => {
    const minted = await s.mint({ grants: [{ scope: "*", tokens: ["read-only"] }] });
    await s.call("PUT", "/repository/default/durable/a.txt", { key: key(), body: "durable" });
    for (const name of ["artifacts", "auth", "gateway"] as const) {
      await s.stopService(name);
      await s.startService(name);
    }
    const res = await s.call("GET", "/repository/default/durable/a.txt", { key: minted.key });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("durable");
  });

  it("a gateway told to stop finishes the downloads under way within svc.shutdown-grace, and cuts them after it", async () => {
    const size = 64 * 1024 * 1024;
    const content = Buffer.alloc(size, 7);
    const digest = createHash("sha256").update(content).digest("hex");
    expect((await s.call("PUT", "/repository/default/rollout/big.bin", { key: key(), body: content })).status).toBe(201);
    const u = new URL(s.gatewayUrl);

    /**
     * Starts a download, holds it still until `release` resolves, then reads it to the end.
     * `started` resolves once the answer's headers arrived: the download is under way (on a busy
     * machine a request sent 300 ms before the stop may reach the gateway after it, and get the
     * 503 a closing server gives a new request).
     */
    const heldDownload = (release: Promise<unknown>) => {
      let started!: (status: number | undefined) => void;
      const startedAt = new Promise<number | undefined>((r) => (started = r));
      const result = new Promise<{ bytes: number; sha256: string; complete: boolean }>((resolve, reject) => {
        const req = request({ host: u.hostname, port: u.port, path: "/repository/default/rollout/big.bin", headers: { "service-repository-key": key() } }, (res) => {
          started(res.statusCode);
          res.pause();
          const hash = createHash("sha256");
          let bytes = 0;
          res.on("data", (c: Buffer) => {
            bytes += c.length;
            hash.update(c);
          });
          let settled = false;
          const done = () => {
            if (settled) return;
            settled = true;
            resolve({ bytes, sha256: hash.digest("hex"), complete: res.complete });
          };
          res.on("end", done);
          res.on("error", done);
          res.on("close", () => {
            if (!res.complete) done();
          });
          void release.then(() => res.resume());
        });
        req.on("error", (err) => {
          started(undefined);
          reject(err);
        });
        req.end();
      });
      return { started: startedAt, result };
    };

    // Default grace (25 s): the download started before the stop goes to the end; the gateway exits cleanly.
    let released!: () => void;
    const gate = new Promise<void>((r) => (released = r));
    const first = heldDownload(gate);
    expect(await first.started).toBe(200);
    // waitForOutput finds lines printed before too: the earlier restarts said "shutting down".
    const stops = () => s.output("gateway").filter((l) => l.includes("shutting down")).length;
    const stopsBefore = stops();
    // Waited for past the gateway's 25 s grace: a busy machine took more than the runner's usual 10 s.
    const exited = s.stopService("gateway", "SIGTERM", 35_000);
    await vi.waitUntil(() => stops() > stopsBefore, { timeout: 20_000, interval: 50 });
    released();
    expect(await first.result).toEqual({ bytes: size, sha256: digest, complete: true });
    expect(await exited).toBe(0);

    // With svc.shutdown-grace=1s a download held longer than that is cut, and the gateway says so.
    // (The next tests need a gateway whatever happens here: it is started again in the finally.)
    await s.startService("gateway", { SVC_SHUTDOWN_GRACE: "1s" });
    try {
      let releaseSecond!: () => void;
      const second = heldDownload(new Promise<void>((r) => (releaseSecond = r)));
      expect(await second.started).toBe(200);
      const cut = s.stopService("gateway", "SIGTERM");
      expect(await cut).toBe(1);
      releaseSecond();
      const result = await second.result;
      expect(result.complete).toBe(false);
      expect(result.bytes).toBeLessThan(size);
    } finally {
      if (s.pid("gateway") === undefined || (await fetch(`${s.gatewayUrl}/health/live`).then(() => false, () => true))) await s.startService("gateway", { SVC_SHUTDOWN_GRACE: undefined });
    }
    expect((await s.call("GET", "/repository/default/rollout/big.bin", { key: key() })).status).toBe(200);
  });

  it("a crash in the middle of an upload leaves the old content, never half a file", async () => {
    await s.call("PUT", "/repository/default/atomic/file.bin", { key: key(), body: "old content" });
    let pushed = 0;
    const slow = new Readable({
      read() {
        if (pushed++ < 4) setTimeout(() => this.push(Buffer.alloc(256 * 1024, 1)), 50);
        // then stall: the upload never finishes on its own
      },
    });
    const upload = s
      .call("PUT", "/repository/default/atomic/file.bin", { key: key(), body: Readable.toWeb(slow) as ReadableStream })
      .catch((err: unknown) => err);
    await new Promise((r) => setTimeout(r, 600));
    await s.stopService("artifacts", "SIGKILL");
    await upload;
    await s.startService("artifacts");
    const res = await s.call("GET", "/repository/default/atomic/file.bin", { key: key() });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("old content");
    // Nothing else appeared beside it: the cut upload is no artifact.
    const listed = (await (await s.call("GET", "/api/repositories/default/files?prefix=atomic/", { key: key() })).json()) as { path: string }[];
    expect(listed.map((f) => f.path)).toEqual(["atomic/file.bin"]);
  });
});
