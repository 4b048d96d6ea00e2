import { describe, expect, it } from "vitest";
import { ServiceError } from "@svc/contracts";
import { keyId, makeKey, parseKey } from "@svc/keys";
import type { CredentialChange } from "../messaging/credential-announcer.js";
import { recordingAnnouncer } from "../messaging/recording-announcer.js";
import type { CredentialRow, CredentialStore, GrantRow } from "../store/credential-store.js";
import { credentialServiceFactory } from "./credential-service.js";

const DAY = 86_400_000;
const T0 = new Date("2026-03-01T12:00:00Z");

/** The credential store in memory: rows and grants keyed as Postgres keys them. */
function fakeCredentialStore(): CredentialStore {
  const rows = new Map<string, CredentialRow>();
  const grants = new Map<string, GrantRow>();
  const grantKey = (kind: string, id: string, scope: string) => `${kind}\u0000${id}\u0000${scope}`;
  const row = (id: string) => {
    const r = rows.get(id);
    if (!r) throw new Error(`no row ${id}`);
    return r;
  };
  const store = {
    transaction: <T>(fn: (tx: never) => Promise<T>) => fn(undefined as never),
    async insert(r: { id: string; tenant: string; label: string | null; expiresAt: Date | null; allowedIps?: string[]; owner?: string | null }) {
      const created: CredentialRow = {
        id: r.id,
        tenant: r.tenant,
        label: r.label,
        created_at: new Date(),
        expires_at: r.expiresAt,
        revoked_at: null,
        allowed_ips: r.allowedIps ?? [],
        bootstrap: false,
        seq: rows.size + 1,
        last_used_at: null,
        last_used_from: null,
        use_count: "0",
        rotated_to: null,
        owner: r.owner ?? null,
      };
      rows.set(r.id, created);
      return created;
    },
    async upsertBootstrap(id: string, tenant: string) {
      const r = rows.get(id) ?? (await store.insert({ id, tenant, label: "bootstrap key", expiresAt: null }));
      Object.assign(r, { expires_at: null, revoked_at: null, bootstrap: true });
    },
    findById: async (id: string) => rows.get(id),
    list: async (opts: { after?: string; limit: number }) => [...rows.values()].sort((a, b) => a.id.localeCompare(b.id)).filter((r) => !opts.after || r.id > opts.after).slice(0, opts.limit),
    async revoke(id: string, at: Date) {
      const r = rows.get(id);
      if (r && !r.revoked_at) r.revoked_at = at;
    },
    setExpiry: async (id: string, expiresAt: Date | null) => Object.assign(row(id), { expires_at: expiresAt }),
    retire: async (id: string, expiresAt: Date, successor: string) => Object.assign(row(id), { expires_at: expiresAt, rotated_to: successor }),
    setAllowedIps: async (id: string, addresses: string[]) => Object.assign(row(id), { allowed_ips: addresses }),
    async recordUsage(batch: { id: string; count: number; lastUsed: Date; address: string }[]) {
      for (const u of batch) {
        const r = rows.get(u.id);
        if (r) Object.assign(r, { use_count: String(Number(r.use_count) + u.count), last_used_at: u.lastUsed, last_used_from: u.address });
      }
    },
    async copyGrants(fromKind: GrantRow["subject_kind"], fromId: string, toId: string) {
      for (const g of [...grants.values()]) if (g.subject_kind === fromKind && g.subject_id === fromId) grants.set(grantKey(fromKind, toId, g.scope), { ...g, subject_id: toId });
    },
    grantsOf: async (kind: GrantRow["subject_kind"], ids: string[]) =>
      [...grants.values()].filter((g) => g.subject_kind === kind && ids.includes(g.subject_id)).sort((a, b) => a.scope.localeCompare(b.scope)),
    async setGrant(g: { kind: GrantRow["subject_kind"]; subjectId: string; scope: string; tokens: string[]; expiresAt: Date | null }) {
      const stored: GrantRow = { subject_kind: g.kind, subject_id: g.subjectId, scope: g.scope, tokens: g.tokens, expires_at: g.expiresAt, updated_at: new Date() };
      grants.set(grantKey(g.kind, g.subjectId, g.scope), stored);
      return stored;
    },
    removeGrant: async (kind: GrantRow["subject_kind"], subjectId: string, scope: string) => grants.delete(grantKey(kind, subjectId, scope)),
  };
  return store as unknown as CredentialStore;
}

function setup(opts: { defaultLifetime?: string; maxLifetime?: string; trackUsage?: boolean } = {}) {
  let now = T0;
  const published: CredentialChange[] = [];
  const store = fakeCredentialStore();
  const credentials = credentialServiceFactory({
    store,
    tenant: "acme",
    defaultLifetime: opts.defaultLifetime,
    maxLifetime: opts.maxLifetime,
    trackUsage: opts.trackUsage ?? false,
    announce: recordingAnnouncer(published),
    subjects: { groupsOf: async () => [] },
    now: () => now,
  });
  return { credentials, store, published, advance: (ms: number) => (now = new Date(now.getTime() + ms)) };
}

async function refusal(p: Promise<unknown>): Promise<{ code: string; message: string }> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ServiceError);
  const e = err as ServiceError;
  return { code: e.code, message: e.message };
}

describe("minting a key", () => {
  it("returns a key of the tenant that parses, whose id is the key's digest, and announces it", async () => {
    const { credentials, published } = setup();
    const minted = await credentials.mint({ label: "  ci  " });
    const parsed = parseKey(minted.key);
    expect(parsed.ok && parsed.key).toEqual({ tenant: "acme", id: minted.id });
    expect(minted.id).toBe(keyId(minted.key));
    expect(minted.label).toBe("ci");
    expect(published).toEqual([{ subject: { kind: "key", id: minted.id }, change: "minted" }]);
    expect((await credentials.resolve(minted.id))?.state).toBe("active");
  });

  it("expires after 90 days unless svc.credential-default-lifetime says otherwise", async () => {
    expect((await setup().credentials.mint({})).expires).toBe(new Date(T0.getTime() + 90 * DAY).toISOString());
    expect((await setup({ defaultLifetime: "P7D" }).credentials.mint({})).expires).toBe(new Date(T0.getTime() + 7 * DAY).toISOString());
  });

  it("takes a duration or an instant, and a key that never expires when no lifetime cap is set", async () => {
    const { credentials } = setup();
    expect((await credentials.mint({ expires: "P30D" })).expires).toBe(new Date(T0.getTime() + 30 * DAY).toISOString());
    expect((await credentials.mint({ expires: "2027-01-01T00:00:00Z" })).expires).toBe("2027-01-01T00:00:00.000Z");
    expect((await credentials.mint({ nonExpiring: true })).expires).toBeNull();
  });

  it("pulls every expiry back to svc.credential-max-lifetime, non-expiring keys included", async () => {
    const { credentials } = setup({ maxLifetime: "P30D" });
    const cap = new Date(T0.getTime() + 30 * DAY).toISOString();
    expect((await credentials.mint({ nonExpiring: true })).expires).toBe(cap);
    expect((await credentials.mint({ expires: "P1Y" })).expires).toBe(cap);
    expect((await credentials.mint({})).expires).toBe(cap);
    expect((await credentials.mint({ expires: "P1D" })).expires).toBe(new Date(T0.getTime() + DAY).toISOString());
  });

  it("refuses an expiry in the past, one that does not parse, and expires together with nonExpiring", async () => {
    const { credentials, published } = setup();
    expect(await refusal(credentials.mint({ expires: "2020-01-01T00:00:00Z" }))).toMatchObject({ code: "invalid_input" });
    expect(await refusal(credentials.mint({ expires: "soon" }))).toMatchObject({ code: "invalid_input" });
    expect(await refusal(credentials.mint({ expires: "P1D", nonExpiring: true }))).toMatchObject({ code: "invalid_input" });
    expect(published).toEqual([]);
  });
});

describe("resolving a key", () => {
  it("reads revoked once revoked, and the revocation is announced", async () => {
    const { credentials, published } = setup();
    const { id } = await credentials.mint({});
    await credentials.revoke(id);
    expect((await credentials.resolve(id))?.state).toBe("revoked");
    expect(published.at(-1)).toEqual({ subject: { kind: "key", id }, change: "revoked" });
  });

  it("reads expired once its expiry has passed", async () => {
    const { credentials, advance } = setup();
    const { id } = await credentials.mint({ expires: "P1D" });
    advance(DAY);
    expect((await credentials.resolve(id))?.state).toBe("expired");
  });

  it("knows nothing of an id never minted", async () => {
    const { credentials } = setup();
    expect(await credentials.resolve(keyId(makeKey("acme")))).toBeUndefined();
    expect(await refusal(credentials.get(keyId(makeKey("acme"))))).toMatchObject({ code: "not_found" });
  });

  it("carries the key's grants, normalised, and drops a removed one", async () => {
    const { credentials } = setup();
    const { id } = await credentials.mint({});
    await credentials.setGrant(id, { scope: "libs:com/acme", tokens: ["read-only"] });
    await credentials.setGrant(id, { scope: "*", tokens: ["repository:read"], expires: "P1D" });
    expect((await credentials.resolve(id))?.grants).toEqual([
      { scope: "*", tokens: ["repository:read"], expires: new Date(T0.getTime() + DAY).toISOString() },
      { scope: "libs:com/acme", tokens: ["cache:read", "repository:read"], expires: null },
    ]);
    await credentials.removeGrant(id, "*");
    expect((await credentials.resolve(id))?.grants.map((g) => g.scope)).toEqual(["libs:com/acme"]);
    expect(await refusal(credentials.removeGrant(id, "*"))).toMatchObject({ code: "not_found" });
  });
});

describe("changing a key", () => {
  it("refuses new grants, expiry or addresses on a revoked key", async () => {
    const { credentials } = setup();
    const { id } = await credentials.mint({});
    await credentials.revoke(id);
    expect(await refusal(credentials.setGrant(id, { scope: "*", tokens: ["*"] }))).toMatchObject({ code: "conflict" });
    expect(await refusal(credentials.setExpiry(id, "P1D"))).toMatchObject({ code: "conflict" });
    expect(await refusal(credentials.setAllowedAddresses(id, ["10.0.0.0/8"]))).toMatchObject({ code: "conflict" });
  });

  it("an expired key is final: no grant, grant removal, expiry or allowlist brings it back", async () => {
    const { credentials, advance } = setup();
    const { id } = await credentials.mint({ expires: "PT1H" });
    await credentials.setGrant(id, { scope: "*", tokens: ["read-only"] });
    advance(2 * 3_600_000);
    expect(await refusal(credentials.setGrant(id, { scope: "*", tokens: ["*"] }))).toMatchObject({ code: "conflict" });
    expect(await refusal(credentials.removeGrant(id, "*"))).toMatchObject({ code: "conflict" });
    for (const expires of ["P1D", "", null]) expect(await refusal(credentials.setExpiry(id, expires))).toMatchObject({ code: "conflict" });
    expect(await refusal(credentials.setAllowedAddresses(id, null))).toMatchObject({ code: "conflict" });
    expect(await credentials.resolve(id)).toMatchObject({ state: "expired", expires: new Date(T0.getTime() + 3_600_000).toISOString() });
    await credentials.revoke(id); // ending it further is always allowed
    expect((await credentials.resolve(id))?.state).toBe("revoked");
  });

  it("a key a rotation retired keeps its end: its expiry may come sooner, never later or never", async () => {
    const { credentials } = setup();
    const old = await credentials.mint({});
    const { predecessor } = await credentials.rotate(old.id, "P7D");
    expect(await refusal(credentials.setExpiry(old.id, null))).toMatchObject({ code: "conflict" });
    expect(await refusal(credentials.setExpiry(old.id, ""))).toMatchObject({ code: "conflict" });
    expect(await refusal(credentials.setExpiry(old.id, "P30D"))).toMatchObject({ code: "conflict" });
    expect((await credentials.get(old.id)).expires).toBe(predecessor.expires);
    expect((await credentials.setExpiry(old.id, "P1D")).expires).toBe(new Date(T0.getTime() + DAY).toISOString());
  });

  it("refuses a grant with an unknown right token or a bad scope", async () => {
    const { credentials } = setup();
    const { id } = await credentials.mint({});
    expect(await refusal(credentials.setGrant(id, { scope: "*", tokens: ["repository:fly"] }))).toMatchObject({ code: "invalid_input" });
    expect(await refusal(credentials.setGrant(id, { scope: "../etc", tokens: ["*"] }))).toMatchObject({ code: "invalid_input" });
  });

  it("sets a new expiry within the cap, clears it when blank, and refuses one in the past", async () => {
    const { credentials } = setup({ maxLifetime: "P30D" });
    const { id } = await credentials.mint({ expires: "P1D" });
    expect((await credentials.setExpiry(id, "P10D")).expires).toBe(new Date(T0.getTime() + 10 * DAY).toISOString());
    expect((await credentials.setExpiry(id, "")).expires).toBe(new Date(T0.getTime() + 30 * DAY).toISOString());
    expect(await refusal(credentials.setExpiry(id, "2020-01-01T00:00:00Z"))).toMatchObject({ code: "invalid_input" });
  });

  it("keeps an address allowlist and refuses an entry that is not an address or range", async () => {
    const { credentials } = setup();
    const { id } = await credentials.mint({});
    expect((await credentials.setAllowedAddresses(id, "10.0.0.0/8, 192.168.1.7")).allowedAddresses).toEqual(["10.0.0.0/8", "192.168.1.7"]);
    expect(await refusal(credentials.setAllowedAddresses(id, ["not-an-address"]))).toMatchObject({ code: "invalid_input" });
    expect((await credentials.resolve(id))?.allowedAddresses).toEqual(["10.0.0.0/8", "192.168.1.7"]);
  });

  it("does not touch a key of another tenant", async () => {
    const { credentials, store } = setup();
    const foreign = keyId(makeKey("other"));
    await store.insert({ id: foreign, tenant: "other", label: null, expiresAt: null });
    expect(await refusal(credentials.get(foreign))).toMatchObject({ code: "not_found" });
    expect(await refusal(credentials.revoke(foreign))).toMatchObject({ code: "not_found" });
  });
});

describe("rotating a key", () => {
  it("mints a successor with the same grants and allowlist; the old key lasts the overlap (7 days by default)", async () => {
    const { credentials, published } = setup();
    const old = await credentials.mint({ label: "deploy" });
    await credentials.setGrant(old.id, { scope: "libs", tokens: ["deploy"] });
    await credentials.setAllowedAddresses(old.id, ["10.0.0.0/8"]);
    const next = await credentials.rotate(old.id, undefined);
    expect(parseKey(next.key).ok).toBe(true);
    expect(next.id).not.toBe(old.id);
    expect(next.label).toBe("deploy");
    expect(next.predecessor).toEqual({ id: old.id, expires: new Date(T0.getTime() + 7 * DAY).toISOString() });
    const successor = await credentials.resolve(next.id);
    expect(successor?.grants).toEqual((await credentials.resolve(old.id))?.grants);
    expect(successor?.allowedAddresses).toEqual(["10.0.0.0/8"]);
    expect(published.slice(-2)).toEqual([
      { subject: { kind: "key", id: old.id }, change: "rotated" },
      { subject: { kind: "key", id: next.id }, change: "minted" },
    ]);
  });

  it("never lets the old key outlive its own expiry, and PT0S ends it at once", async () => {
    const { credentials, advance } = setup();
    const soon = await credentials.mint({ expires: "P1D" });
    expect((await credentials.rotate(soon.id, "P7D")).predecessor.expires).toBe(new Date(T0.getTime() + DAY).toISOString());
    const other = await credentials.mint({});
    await credentials.rotate(other.id, "PT0S");
    advance(1);
    expect((await credentials.resolve(other.id))?.state).toBe("expired");
  });

  it("refuses a revoked or expired key and an overlap that is not a duration", async () => {
    const { credentials, advance } = setup();
    const revoked = await credentials.mint({});
    await credentials.revoke(revoked.id);
    expect(await refusal(credentials.rotate(revoked.id, "P1D"))).toMatchObject({ code: "conflict" });
    const live = await credentials.mint({});
    expect(await refusal(credentials.rotate(live.id, "a week"))).toMatchObject({ code: "invalid_input" });
    const brief = await credentials.mint({ expires: "PT1H" });
    advance(2 * 3_600_000);
    expect(await refusal(credentials.rotate(brief.id, "P1D"))).toMatchObject({ code: "conflict" });
  });
});

describe("the bootstrap key", () => {
  it("holds every right on every repository and never expires", async () => {
    const { credentials } = setup({ maxLifetime: "P30D" });
    const key = makeKey("acme");
    const id = await credentials.provisionBootstrap(key);
    expect(id).toBe(keyId(key));
    expect(await credentials.resolve(id)).toMatchObject({ state: "active", expires: null, grants: [{ scope: "*", tokens: ["*"], expires: null }] });
  });

  it("is marked as the bootstrap key where keys are shown, and no other key is", async () => {
    const { credentials } = setup();
    const id = await credentials.provisionBootstrap(makeKey("acme"));
    const other = await credentials.mint({ label: "ci" });
    expect((await credentials.get(id)).bootstrap).toBe(true);
    expect((await credentials.get(other.id)).bootstrap).toBe(false);
  });

  it("is active again after a restart even if it was revoked meanwhile", async () => {
    const { credentials } = setup();
    const key = makeKey("acme");
    const id = await credentials.provisionBootstrap(key);
    await credentials.revoke(id);
    await credentials.provisionBootstrap(key);
    expect((await credentials.resolve(id))?.state).toBe("active");
  });

  it("refuses a malformed key without echoing it", async () => {
    const { credentials } = setup();
    await expect(credentials.provisionBootstrap("svck_acme.short")).rejects.toThrow("svc.bootstrap-key is not a well-formed key");
  });
});

describe("usage records", () => {
  it("are kept only while svc.track-key-usage is on, and malformed entries are left out", async () => {
    const on = setup({ trackUsage: true });
    const { id } = await on.credentials.mint({});
    await on.credentials.recordUsage([
      { id, count: 3, lastUsed: "2026-03-01T13:00:00Z", address: "10.1.2.3" },
      { id: "not-a-key-id", count: 5, lastUsed: "2026-03-01T13:00:00Z", address: "10.1.2.3" },
      { id, count: -1, lastUsed: "2026-03-01T13:00:00Z", address: "10.1.2.3" },
    ]);
    expect(await on.credentials.get(id)).toMatchObject({ useCount: 3, lastUsed: "2026-03-01T13:00:00.000Z", lastUsedFrom: "10.1.2.3" });

    const off = setup({ trackUsage: false });
    const other = await off.credentials.mint({});
    await off.credentials.recordUsage([{ id: other.id, count: 3, lastUsed: "2026-03-01T13:00:00Z", address: "10.1.2.3" }]);
    expect(await off.credentials.get(other.id)).not.toHaveProperty("useCount");
  });
});
