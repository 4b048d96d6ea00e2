import { connect, JSONCodec } from "nats";
import pg from "pg";
import { describe, expect, it } from "vitest";
import type { CredentialChanged } from "@svc/contracts";
import { natsConnectOptions } from "@svc/kit";
import { twoGateways } from "./two-gateways.js";

/** Past NATS's 1 MiB payload limit had the announcement listed every member (the issue measured 90,000). */
const MEMBERS = 90_000;

const get = (url: string, key: string) => fetch(`${url}/repository/default/shared.txt`, { headers: { "service-repository-key": key } });

/** Polls until `ok` holds; waits for a state, never for a guessed time. */
async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** SQL straight into the suite's auth schema: what no announcement would tell a gateway. */
async function sqlOn<T>(databaseUrl: string, fn: (db: pg.Client) => Promise<T>): Promise<T> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    return await fn(db);
  } finally {
    await db.end();
  }
}

describe("a change to a large group", () => {
  const ctx = twoGateways();

  it(`with ${MEMBERS.toLocaleString("en")} members is announced, naming the group, and another gateway keeps the keys it does not touch`, async () => {
    const { s, b } = ctx;
    const group = `big-${process.pid}`;
    await sqlOn(s.databaseUrl, async (db) => {
      await db.query("insert into auth.groups (name) values ($1)", [group]);
      await db.query("insert into auth.memberships (group_name, principal_id) select $1, 'oidc/member-' || lpad(i::text, 6, '0') from generate_series(1, $2::int) i", [group, MEMBERS]);
    });
    // A key cached on gateway B, then revoked behind every gateway's back: B serves it for as
    // long as the entry stays in its cache, which makes "stayed cached" visible from outside.
    const unrelated = await s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
    expect((await get(b.url, unrelated.key)).status).toBe(200);
    await sqlOn(s.databaseUrl, (db) => db.query("update auth.credentials set revoked_at = now() where id = $1", [unrelated.id]));
    // A second key whose narrowing, announced after the group change, tells us B has heard both.
    const sentinel = await s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
    expect((await get(b.url, sentinel.key)).status).toBe(200);

    const nc = await connect(natsConnectOptions(s.natsUrl));
    const heard: CredentialChanged[] = [];
    const sizes: number[] = [];
    const codec = JSONCodec<CredentialChanged>();
    const sub = nc.subscribe(`svc.${s.tenant}.credential.changed.v1`, {
      callback: (_err, m) => {
        const e = codec.decode(m.data);
        if (e.subject.id === group) {
          heard.push(e);
          sizes.push(m.data.length);
        }
      },
    });
    try {
      await nc.flush();
      const granted = await s.call("POST", `/api/groups/${group}/grants`, { key: s.bootstrapKey, body: { scope: "default", tokens: ["read-only"] } });
      expect(granted.status).toBe(200);
      expect((await s.call("DELETE", `/api/credentials/${sentinel.id}/grants/*`, { key: s.bootstrapKey })).status).toBe(204);

      expect((await until(() => get(b.url, sentinel.key), (r) => r.status === 403)).status).toBe(403);
      await until(async () => heard.length, (n) => n > 0);
      expect(heard.map((e) => [e.subject, e.change, e.affected])).toEqual([[{ kind: "group", id: group }, "grants", undefined]]);
      expect(sizes[0]).toBeLessThan(1024);
      // The group change did not empty B's cache: the revoked-behind-its-back key is still served from it.
      expect((await get(b.url, unrelated.key)).status).toBe(200);
      expect((await get(s.gatewayUrl, unrelated.key)).status).toBe(401);
    } finally {
      sub.unsubscribe();
      await nc.close();
    }
  });
});

describe("an announcement made while NATS is down", () => {
  // A cache TTL far longer than the test: only the announcement can make gateway B let go.
  const ctx = twoGateways({ ownNats: "outbox", env: { SVC_CACHE_TTL: "1h" } });

  it("waits in the auth outbox and reaches every gateway once NATS is back", async () => {
    const { s, b, infra } = ctx;
    const k = await s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
    expect((await get(b.url, k.key)).status).toBe(200);
    const waiting = () =>
      sqlOn(s.databaseUrl, async (db) => (await db.query<{ event: CredentialChanged }>("select event from auth.outbox order by seq")).rows.map((r) => r.event));
    await infra.stopServer("nats");
    try {
      expect((await s.call("DELETE", `/api/credentials/${k.id}`, { key: s.bootstrapKey })).status).toBe(204);
      expect((await get(s.gatewayUrl, k.key)).status).toBe(401); // the changing node: at once
      expect((await get(b.url, k.key)).status).toBe(200); // B has not heard
      const kept = await waiting();
      expect(kept.map((e) => [e.subject, e.change])).toContainEqual([{ kind: "key", id: k.id }, "revoked"]);
    } finally {
      await infra.startServer("nats");
    }
    expect((await until(() => get(b.url, k.key), (r) => r.status === 401, 60_000)).status).toBe(401);
    expect((await until(waiting, (rows) => rows.length === 0)).length).toBe(0);
  });
});
