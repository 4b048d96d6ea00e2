// Issue 12, item 10: a record of who did what. One access line per request at the gateway, kept
// apart from the other log entries, and an audit line naming who made each administrative change.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeKey } from "@svc/keys";
import { startSuite, type Suite } from "./suite.js";

let s: Suite;
beforeAll(async () => {
  s = await startSuite();
});
afterAll(() => s?.stop());

interface Entry {
  msg: string;
  service: string;
  category?: string;
  method?: string;
  path?: string;
  status?: number;
  principal?: string;
  bytes?: number;
  ms?: number;
  from?: string;
}

async function logs(query: string): Promise<Entry[]> {
  const res = await s.call("GET", `/api/logs?${query}`, { key: s.bootstrapKey });
  expect(res.status).toBe(200);
  return ((await res.json()) as { entries: Entry[] }).entries;
}

/** Reads the access lines until one matches (the line is written once the answer is sent). */
async function accessLine(match: (e: Entry) => boolean): Promise<Entry> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const hit = (await logs("category=access&limit=1000")).find(match);
    if (hit) return hit;
    if (Date.now() > deadline) throw new Error("no such access line");
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("the access log", () => {
  it("records a refused request with its status and the key id it presented, never the key", async () => {
    const stranger = makeKey();
    expect((await s.call("GET", "/api/credentials?probe=1", { key: stranger })).status).toBe(401);
    expect((await s.call("GET", "/repository/default/nothing-here.txt")).status).toBe(401);
    const refused = await accessLine((e) => e.path === "/api/credentials" && e.status === 401);
    expect(refused).toMatchObject({ service: "gateway", category: "access", method: "GET", from: "127.0.0.1" });
    expect(refused.principal).toMatch(/^key:default:[0-9a-f]{64}$/);
    expect(typeof refused.ms).toBe("number");
    const keyless = await accessLine((e) => e.path === "/repository/default/nothing-here.txt");
    expect(keyless).toMatchObject({ status: 401, principal: "anonymous" });
    const all = JSON.stringify(await logs("limit=1000"));
    expect(all).not.toContain(stranger);
    expect(all).not.toContain(s.bootstrapKey);
  });

  it("records an upload and a download with who made them and the bytes sent", async () => {
    const k = await s.mint({ grants: [{ scope: "*", tokens: ["deploy"] }] });
    const body = "x".repeat(50_000);
    expect((await s.call("PUT", "/repository/default/access/a.bin", { key: k.key, body })).status).toBe(201);
    const got = await s.call("GET", "/repository/default/access/a.bin", { key: k.key });
    expect(got.status).toBe(200);
    await got.arrayBuffer();
    const put = await accessLine((e) => e.method === "PUT" && e.path === "/repository/default/access/a.bin");
    expect(put).toMatchObject({ status: 201, principal: `key:default:${k.id}` });
    const download = await accessLine((e) => e.method === "GET" && e.path === "/repository/default/access/a.bin");
    expect(download).toMatchObject({ status: 200, principal: `key:default:${k.id}` });
    expect(download.bytes).toBeGreaterThan(50_000);
  });

  it("keeps the other entries: a thousand requests do not push the start-up lines out", async () => {
    for (let i = 0; i < 25; i++) {
      await Promise.all(Array.from({ length: 50 }, () => s.call("GET", "/api/capabilities", { key: s.bootstrapKey }).then((r) => r.arrayBuffer())));
    }
    const others = await logs("category=other&limit=1000&q=gateway%20ready");
    expect(others.some((e) => e.service === "gateway" && e.msg === "gateway ready")).toBe(true);
    expect((await logs("category=other&limit=1000")).every((e) => e.category !== "access")).toBe(true);
  });

  it("refuses an unknown category with 400", async () => {
    const res = await s.call("GET", "/api/logs?category=nope", { key: s.bootstrapKey });
    expect(res.status).toBe(400);
  });
});

describe("the audit lines", () => {
  it("name who made each administrative change", async () => {
    const k = await s.mint({ label: "audited" });
    expect((await s.call("DELETE", `/api/credentials/${k.id}`, { key: s.bootstrapKey })).status).toBeLessThan(300);
    const deadline = Date.now() + 20_000;
    for (;;) {
      const entries = await logs("category=other&limit=1000");
      const minted = entries.find((e) => e.msg === "credential minted" && (e as { credentialId?: string }).credentialId === k.id);
      const revoked = entries.find((e) => e.msg === "credential revoked" && (e as { credentialId?: string }).credentialId === k.id);
      if (minted && revoked) {
        expect(minted.principal).toMatch(/^[0-9a-f]{64}$/);
        expect(revoked.principal).toBe(minted.principal);
        return;
      }
      if (Date.now() > deadline) throw new Error("no audit line for the change");
      await new Promise((r) => setTimeout(r, 100));
    }
  });
});
