// Uploads as clients (and attackers) send them: stalled bodies, many at once, any Content-Type,
// with preconditions and declared checksums. Everything goes through the gateway.
import { createHash } from "node:crypto";
import { readdirSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSuite, type Suite } from "./suite.js";

let s: Suite;
beforeAll(async () => {
  // Long enough that nothing here is cut unless a test asks for it (the cut test restarts the gateway).
  s = await startSuite({ env: { SVC_UPLOAD_IDLE_TIMEOUT: "10m" } });
});
afterAll(() => s?.stop());

const key = () => s.bootstrapKey;
const sha256 = (b: string | Buffer) => createHash("sha256").update(b).digest("hex");

/** Waits until `check` holds, polling; a state, never a guess at how fast the machine is. */
async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; ; i++) {
    if (await check()) return;
    if (i > 600) throw new Error(`still waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Stalled {
  socket: Socket;
  /** Everything the gateway sent back, once it closed the connection. */
  answer: Promise<string>;
}

/** A PUT that sends its headers and a few bytes of a longer body, then nothing. */
function stalledUpload(path: string, withKey: string, length = 1_000_000): Stalled {
  const u = new URL(s.gatewayUrl);
  const socket = connect({ host: u.hostname, port: Number(u.port) });
  socket.write(`PUT ${path} HTTP/1.1\r\nHost: ${u.host}\r\nService-Repository-Key: ${withKey}\r\nContent-Length: ${length}\r\n\r\nabc`);
  const answer = new Promise<string>((resolve) => {
    let text = "";
    socket.setEncoding("latin1");
    socket.on("data", (d: string) => (text += d));
    socket.on("close", () => resolve(text));
    socket.on("error", () => {});
  });
  return { socket, answer };
}

const uploadsInTmp = () => readdirSync(join(s.storeRoot, "tmp")).length;
const writer = (label: string) => s.mint({ label, grants: [{ scope: "*", tokens: ["deploy"] }] });

describe("stalled uploads", () => {
  it("more stalled uploads than the gateway has upstream connections stop nobody else's PUT, DELETE, HEAD or admin read", async () => {
    expect((await s.call("PUT", "/repository/default/busy/kept.txt", { key: key(), body: "kept" })).status).toBe(201);
    const before = uploadsInTmp();
    // 70 (the gateway used to share 64 connections per upstream), from callers each under the cap.
    const callers = await Promise.all([1, 2, 3, 4, 5].map((i) => writer(`staller ${i}`)));
    const stalled: Stalled[] = [];
    for (let i = 0; i < 70; i++) stalled.push(stalledUpload(`/repository/default/busy/stalled-${i}.bin`, callers[i % 5]!.key));
    try {
      // Each has reached the artifacts service, which is writing it to tmp/.
      await until(() => uploadsInTmp() >= before + 70, "70 uploads under way at the artifacts service");

      expect((await s.call("PUT", "/repository/default/busy/other.txt", { key: key(), body: "other" })).status).toBe(201);
      expect((await s.call("HEAD", "/repository/default/busy/kept.txt", { key: key() })).status).toBe(200);
      expect((await s.call("DELETE", "/repository/default/busy/other.txt", { key: key() })).status).toBe(204);
      expect((await s.call("GET", "/api/repositories", { key: key() })).status).toBe(200);
      expect(await (await s.call("GET", "/repository/default/busy/kept.txt", { key: key() })).text()).toBe("kept");
      // Still stalled, not cut: the others went past them, not after them.
      expect(stalled.every((u) => !u.socket.destroyed)).toBe(true);
    } finally {
      for (const u of stalled) u.socket.destroy();
    }
    await until(() => uploadsInTmp() === before, "the abandoned uploads cleaned out of tmp/");
  });

  it("refuses a caller's upload beyond svc.upload-concurrency at once with 429 and Retry-After, and takes it once one has ended", async () => {
    const caller = await writer("many at once");
    const before = uploadsInTmp();
    const stalled: Stalled[] = [];
    for (let i = 0; i < 16; i++) stalled.push(stalledUpload(`/repository/default/cap/${i}.bin`, caller.key));
    try {
      // All 16 admitted and under way at the artifacts service.
      await until(() => uploadsInTmp() >= before + 16, "16 uploads under way at the artifacts service");
      let refused: Response | undefined;
      await until(async () => {
        refused = await s.call("PUT", "/repository/default/cap/one-more.txt", { key: caller.key, body: "17th" });
        return refused.status >= 300;
      }, "the 17th upload to be refused");
      expect(refused!.status).toBe(429);
      expect(refused!.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(refused!.headers.get("content-type")).toMatch(/^text\/plain/);
      expect(await refused!.text()).toMatch(/svc\.upload-concurrency/);
      // Another caller is not held to this one's cap.
      expect((await s.call("PUT", "/repository/default/cap/someone-else.txt", { key: key(), body: "x" })).status).toBe(201);

      stalled.pop()!.socket.destroy();
      await until(async () => (await s.call("PUT", "/repository/default/cap/one-more.txt", { key: caller.key, body: "17th" })).status < 300, "a place under the cap");
    } finally {
      for (const u of stalled) u.socket.destroy();
    }
  });

  it("cuts an upload that sends nothing for svc.upload-idle-timeout with 408, and keeps the artifact's old content", async () => {
    expect((await s.call("PUT", "/repository/default/idle/a.txt", { key: key(), body: "old content" })).status).toBe(201);
    const before = uploadsInTmp();
    await s.stopService("gateway");
    await s.startService("gateway", { SVC_UPLOAD_IDLE_TIMEOUT: "1s" });
    try {
      const stalled = stalledUpload("/repository/default/idle/a.txt", key());
      const answer = await stalled.answer;
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
      expect(answer).toMatch(/svc\.upload-idle-timeout/);
      await s.waitForOutput(/cut a request body that stopped arriving/, { service: "gateway" });
      await until(() => uploadsInTmp() === before, "the cut upload cleaned out of tmp/");
      expect(await (await s.call("GET", "/repository/default/idle/a.txt", { key: key() })).text()).toBe("old content");
      // A small body (read whole by the gateway before it goes upstream) is cut the same way.
      const small = await stalledUpload("/repository/default/idle/a.txt", key(), 1000).answer;
      expect(small).toMatch(/^HTTP\/1\.1 408 /);
      expect(await (await s.call("GET", "/repository/default/idle/a.txt", { key: key() })).text()).toBe("old content");
      // A body that keeps arriving, however slowly, is not cut.
      const slow = new ReadableStream<Uint8Array>({
        async start(c) {
          for (let i = 0; i < 4; i++) {
            c.enqueue(new TextEncoder().encode(`part ${i};`));
            await new Promise((r) => setTimeout(r, 400));
          }
          c.close();
        },
      });
      expect((await s.call("PUT", "/repository/default/idle/a.txt", { key: key(), body: slow })).status).toBe(200);
    } finally {
      await s.stopService("gateway");
      await s.startService("gateway", { SVC_UPLOAD_IDLE_TIMEOUT: "10m" });
    }
  });
});

describe("upload bodies are opaque bytes", () => {
  it("takes a text/plain body over 1 MiB, one with a Content-Type nobody can parse, and bytes that are not UTF-8, unchanged", async () => {
    const big = "x".repeat(2 * 1024 * 1024);
    const put = await s.call("PUT", "/repository/default/opaque/big.txt", { key: key(), body: big, headers: { "content-type": "text/plain" } });
    expect(put.status).toBe(201);
    expect(((await put.json()) as { sha256: string }).sha256).toBe(sha256(big));

    const odd = await s.call("PUT", "/repository/default/opaque/odd.bin", { key: key(), body: "odd", headers: { "content-type": "not a/media type;;=" } });
    expect(odd.status).toBe(201);
    expect(await (await s.call("GET", "/repository/default/opaque/odd.bin", { key: key() })).text()).toBe("odd");

    const latin = Buffer.from([0xff, 0xfe, 0x00, 0xc3, 0x28, 0x41]);
    expect((await s.call("PUT", "/repository/default/opaque/latin.txt", { key: key(), body: latin, headers: { "content-type": "text/plain; charset=utf-8" } })).status).toBe(201);
    const back = Buffer.from(await (await s.call("GET", "/repository/default/opaque/latin.txt", { key: key() })).arrayBuffer());
    expect(back.equals(latin)).toBe(true);
  });
});

describe("safe concurrent publishing", () => {
  const path = "/repository/default/safe/lib.jar";
  const get = async () => s.call("GET", path, { key: key() });

  it("honours If-None-Match: * and If-Match with the ETag a GET answered, 412 otherwise", async () => {
    const first = await s.call("PUT", path, { key: key(), body: "v1", headers: { "if-none-match": "*" } });
    expect(first.status).toBe(201);
    const again = await s.call("PUT", path, { key: key(), body: "v1 again", headers: { "if-none-match": "*" } });
    expect(again.status).toBe(412);
    expect(await again.text()).toMatch(/If-None-Match/);
    expect(await (await get()).text()).toBe("v1");

    const etag = (await get()).headers.get("etag")!;
    expect(first.headers.get("etag")).toBe(etag);
    expect((await s.call("PUT", path, { key: key(), body: "v2", headers: { "if-match": etag } })).status).toBe(200);
    // The same tag is stale now: a second publisher that read v1 is refused.
    expect((await s.call("PUT", path, { key: key(), body: "v2 by someone else", headers: { "if-match": etag } })).status).toBe(412);
    expect(await (await get()).text()).toBe("v2");
    // The SHA-256 in quotes names a version too.
    expect((await s.call("PUT", path, { key: key(), body: "v3", headers: { "if-match": `"${sha256("v2")}"` } })).status).toBe(200);
    expect((await s.call("PUT", "/repository/default/safe/absent.jar", { key: key(), body: "x", headers: { "if-match": "*" } })).status).toBe(412);
    expect((await s.call("GET", "/repository/default/safe/absent.jar", { key: key() })).status).toBe(404);
  });

  it("refuses an upload whose declared checksum does not match its body, keeping the old content", async () => {
    expect((await s.call("PUT", path, { key: key(), body: "good" })).status).toBeLessThan(300);
    for (const headers of <Record<string, string>[]>[
      { "x-checksum-sha256": sha256("something else") },
      { "x-checksum-sha1": createHash("sha1").update("something else").digest("hex") },
      { "x-checksum-md5": createHash("md5").update("something else").digest("hex") },
      { "content-md5": createHash("md5").update("something else").digest("base64") },
    ]) {
      const res = await s.call("PUT", path, { key: key(), body: "corrupted", headers });
      expect(res.status, Object.keys(headers)[0]).toBe(400);
      expect(await res.text()).toMatch(new RegExp(Object.keys(headers)[0]!));
    }
    expect((await s.call("PUT", path, { key: key(), body: "x", headers: { "x-checksum-sha256": "not hex" } })).status).toBe(400);
    expect(await (await get()).text()).toBe("good");

    const body = "published with checksums";
    const ok = await s.call("PUT", path, {
      key: key(),
      body,
      headers: {
        "x-checksum-sha256": sha256(body),
        "x-checksum-sha1": createHash("sha1").update(body).digest("hex"),
        "content-md5": createHash("md5").update(body).digest("base64"),
      },
    });
    expect(ok.status).toBe(200);
    expect(await (await get()).text()).toBe(body);
  });
});
