import { renameSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { identityHeaders } from "@svc/kit";
import { keyId } from "@svc/keys";
import { startSuite, type Suite } from "./suite.js";

let s: Suite;
beforeAll(async () => {
  s = await startSuite();
});
afterAll(() => s?.stop());

const REF = /^[A-Z0-9]{12}$/;

describe("the gateway is the only door", () => {
  it("upstream services refuse a request that did not come through the gateway", async () => {
    for (const [service, path] of [
      ["artifacts", "/repository/default/a.txt"],
      ["auth", "/api/credentials"],
      ["admin", "/api/capabilities"],
      ["auth", `/internal/keys/${keyId(s.bootstrapKey)}`],
    ] as const) {
      const res = await fetch(`${s.urls[service]}${path}`, { headers: { "service-repository-key": s.bootstrapKey } });
      expect(res.status, `${service} ${path}`).toBe(401);
    }
  });

  it("upstream services refuse a forged, stale or replayed-elsewhere identity", async () => {
    const principal = `key:default:${keyId(s.bootstrapKey)}`;
    const path = "/api/credentials";
    const forged = identityHeaders("x".repeat(40), "GET", path, principal);
    expect((await fetch(`${s.urls.auth}${path}`, { headers: forged })).status).toBe(401);
    const stale = identityHeaders(s.internalSecret, "GET", path, principal, Date.now() - 10 * 60_000);
    expect((await fetch(`${s.urls.auth}${path}`, { headers: stale })).status).toBe(401);
    const otherMethod = identityHeaders(s.internalSecret, "GET", path, principal);
    expect((await fetch(`${s.urls.auth}${path}`, { method: "POST", headers: { ...otherMethod, "content-type": "application/json" }, body: "{}" })).status).toBe(401);
    const good = identityHeaders(s.internalSecret, "GET", path, principal);
    expect((await fetch(`${s.urls.auth}${path}`, { headers: good })).status).toBe(200);
  });

  it("never trusts identity headers a client sends to the gateway", async () => {
    const principal = `key:default:${keyId(s.bootstrapKey)}`;
    const spoof = identityHeaders(s.internalSecret, "GET", "/api/credentials", principal);
    const res = await s.call("GET", "/api/credentials", { headers: spoof });
    expect(res.status).toBe(401);
  });
});

describe("unexpected failures", () => {
  it("answers a dependency that is down with 503, Retry-After and a problem document carrying only a reference, and logs the stack under it", async () => {
    await s.stopService("auth");
    try {
      const res = await s.call("GET", "/api/credentials", { key: s.bootstrapKey });
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      const body = (await res.json()) as Record<string, unknown>;
      expect(body.title).toBe("Service unavailable");
      expect(body.reference).toMatch(REF);
      const text = JSON.stringify(body);
      expect(text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|at |Error/);
      const line = await s.waitForOutput(new RegExp(`Unexpected failure ${body.reference} while GET /api/credentials`), { service: "gateway" });
      const entry = JSON.parse(line) as { level: number; err?: { stack?: string } };
      expect(entry.level).toBe(50);
      expect(entry.err?.stack).toBeTruthy();
    } finally {
      await s.startService("auth");
    }
  });

  it("answers an artifact failure in plain text with the reference, never a path or stack", async () => {
    const tmp = join(s.storeRoot, "tmp");
    renameSync(tmp, `${tmp}.moved`);
    writeFileSync(tmp, "not a folder");
    try {
      const res = await s.call("PUT", "/repository/default/fails.txt", { key: s.bootstrapKey, body: "x" });
      expect(res.status).toBe(500);
      const text = await res.text();
      const ref = /Reference: ([A-Z0-9]{12})/.exec(text)?.[1];
      expect(ref).toMatch(REF);
      expect(text).not.toMatch(/ENOTDIR|\/tmp|store|\.data|at /);
      const line = await s.waitForOutput(new RegExp(`Unexpected failure ${ref} while PUT /repository/default/fails.txt`), { service: "artifacts" });
      expect((JSON.parse(line) as { err: { stack: string } }).err.stack).toMatch(/ENOTDIR/);

      // A package client that asks for JSON (npm does) gets a JSON error document instead.
      const npm = await s.call("PUT", "/repository/default/fails.txt", { key: s.bootstrapKey, body: "x", headers: { accept: "application/json" } });
      expect(npm.status).toBe(500);
      expect(npm.headers.get("content-type")).toMatch(/^application\/json/);
      const doc = (await npm.json()) as { error: string; reference: string };
      expect(doc.reference).toMatch(REF);
      expect(doc.reference).not.toBe(ref);
      expect(doc.error).toBe(`Unexpected failure. Reference: ${doc.reference}`);
      await s.waitForOutput(new RegExp(`Unexpected failure ${doc.reference} while PUT /repository/default/fails.txt`), { service: "artifacts" });

      // The store fails while the body is still arriving: still our failure (500), not a sender that went away.
      let timer: NodeJS.Timeout | undefined;
      const slow = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode("first part"));
          timer = setTimeout(() => {
            controller.enqueue(new TextEncoder().encode(", second part"));
            controller.close();
          }, 1500);
        },
      });
      const midway = await s.call("PUT", "/repository/default/fails.txt", { key: s.bootstrapKey, body: slow });
      clearTimeout(timer);
      expect(midway.status).toBe(500);
      expect(await midway.text()).toMatch(/Reference: [A-Z0-9]{12}/);
    } finally {
      rmSync(tmp);
      renameSync(`${tmp}.moved`, tmp);
      mkdirSync(tmp, { recursive: true });
    }
    expect((await s.call("PUT", "/repository/default/fails.txt", { key: s.bootstrapKey, body: "x" })).status).toBe(201);
  });

  it("mints a new reference for every failure and none for a refusal it meant", async () => {
    await s.stopService("admin");
    try {
      const a = (await (await s.call("GET", "/api/capabilities", { key: s.bootstrapKey })).json()) as { reference: string };
      const b = (await (await s.call("GET", "/api/capabilities", { key: s.bootstrapKey })).json()) as { reference: string };
      expect(a.reference).toMatch(REF);
      expect(b.reference).toMatch(REF);
      expect(a.reference).not.toBe(b.reference);
    } finally {
      await s.startService("admin");
    }
    const refused = (await (await s.call("GET", "/api/credentials")).json()) as Record<string, unknown>;
    expect(refused.reference).toBeUndefined();
    const missing = await s.call("GET", "/repository/default/none.txt", { key: s.bootstrapKey });
    expect(missing.status).toBe(404);
    expect(await missing.text()).not.toMatch(/Reference/);
  });

  it("keeps keys out of the logs", async () => {
    const minted = await s.mint({ label: "logged?" });
    await s.call("GET", "/repository/default/x", { key: minted.key });
    await s.call("GET", "/repository/default/x", { headers: { authorization: `Bearer ${minted.key}` } });
    const all = s.output().join("\n");
    expect(all).not.toContain(minted.key);
    expect(all).not.toContain(s.bootstrapKey);
    expect(all).not.toContain(s.internalSecret);
  });
});
