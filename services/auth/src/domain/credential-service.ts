import { makeKey, keyId, parseKey } from "@svc/keys";
import { conflict, invalid, notFound, type CredentialChanged, type KeyResolution, type KeyUsageBatch } from "@svc/contracts";
import { addDuration, durationMs, parseAddressList, parseExpiry, parseIsoDuration } from "@svc/kit";
import type { Transaction } from "kysely";
import type { Announcer } from "../messaging/credential-announcer.js";
import type { CredentialRow, CredentialStore } from "../store/credential-store.js";
import type { AuthDatabase } from "../store/schema.js";
import { grantView, readGrant, readScope, type GrantInput, type GrantView } from "./grant-input.js";
import { withWarnings, type RepositoryCheck } from "./repository-check.js";
import { heldGrants, type HeldGrantsDeps } from "./held-grants.js";
import { intersectGrants } from "@svc/grants";

const DEFAULT_LIFETIME = "P90D";
const DEFAULT_OVERLAP = "P7D";
/** A key expiring within this is marked `expiringSoon` in listings: a key that lapses unnoticed breaks a build. */
export const EXPIRING_SOON = "P14D";

export interface CredentialView {
  id: string;
  label: string | null;
  created: string;
  expires: string | null;
  state: "active" | "expired" | "revoked";
  /** Active and expiring within 14 days (EXPIRING_SOON). */
  expiringSoon: boolean;
  revoked: string | null;
  allowedAddresses: string[];
  grants: GrantView[];
  /** The key `svc.bootstrap-key` provisions: revoking it takes away the deployment's first key. */
  bootstrap: boolean;
  /** A personal key's person (it holds at most what they hold); null for a key an administrator issued. */
  owner: string | null;
  /** Only while svc.track-key-usage is on. */
  lastUsed?: string | null;
  lastUsedFrom?: string | null;
  useCount?: number;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function stateOf(row: CredentialRow, now: Date): CredentialView["state"] {
  if (row.revoked_at) return "revoked";
  if (row.expires_at && row.expires_at.getTime() <= now.getTime()) return "expired";
  return "active";
}


export interface CredentialServiceDeps {
  store: CredentialStore;
  tenant: string;
  defaultLifetime: string | undefined;
  maxLifetime: string | undefined;
  trackUsage: boolean;
  announce: Announcer;
  /** Words a warning for a grant naming a repository that does not exist; no check when absent. */
  repositories?: Pick<RepositoryCheck, "warningsFor">;
  /** A personal key's owner's groups, to narrow the key to what its owner holds now. */
  subjects: HeldGrantsDeps["subjects"];
  now?: () => Date;
}

type Tx = Transaction<AuthDatabase> | undefined;

export function credentialServiceFactory(deps: CredentialServiceDeps) {
  const { store, tenant } = deps;
  const now = deps.now ?? (() => new Date());

  /** Pulls an expiry back to the lifetime cap, if one is set. */
  const capped = (created: Date, expires: Date | null): Date | null => {
    if (!deps.maxLifetime) return expires;
    const cap = addDuration(created, parseIsoDuration(deps.maxLifetime)!);
    return expires === null || expires.getTime() > cap.getTime() ? cap : expires;
  };

  const mintExpiry = (created: Date, input: { expires?: string; nonExpiring?: boolean }): Date | null => {
    if (input.nonExpiring) {
      if (input.expires !== undefined && input.expires.trim() !== "") throw invalid("expires", "give either expires or nonExpiring, not both");
      return capped(created, null);
    }
    const text = input.expires?.trim() ?? "";
    if (text === "") return capped(created, addDuration(created, parseIsoDuration(deps.defaultLifetime ?? DEFAULT_LIFETIME)!));
    const at = parseExpiry(text, created);
    if (!at) throw invalid("expires", `"${text}" is neither an ISO-8601 duration (e.g. P30D) nor an instant (e.g. 2027-01-01T00:00:00Z)`);
    if (at.getTime() <= created.getTime()) throw invalid("expires", "expires must lie in the future");
    return capped(created, at);
  };

  const view = async (rows: CredentialRow[]): Promise<CredentialView[]> => {
    const grants = await store.grantsOf("key", rows.map((r) => r.id));
    const at = now();
    const soon = addDuration(at, parseIsoDuration(EXPIRING_SOON)!);
    return rows.map((r) => ({
      id: r.id,
      label: r.label,
      created: r.created_at.toISOString(),
      expires: iso(r.expires_at),
      state: stateOf(r, at),
      expiringSoon: stateOf(r, at) === "active" && r.expires_at !== null && r.expires_at.getTime() <= soon.getTime(),
      revoked: iso(r.revoked_at),
      allowedAddresses: r.allowed_ips,
      grants: grants.filter((g) => g.subject_id === r.id).map(grantView),
      bootstrap: r.bootstrap,
      owner: r.owner,
      ...(deps.trackUsage ? { lastUsed: iso(r.last_used_at), lastUsedFrom: r.last_used_from, useCount: Number(r.use_count) } : {}),
    }));
  };

  const existing = async (id: string, tx?: Tx, opts?: { forUpdate?: boolean }) => {
    const row = await store.findById(id, tx, opts);
    if (!row || row.tenant !== tenant) throw notFound(`no credential with id ${id}`);
    return row;
  };

  /**
   * The key, locked, when it may still be changed: revoked and expired are final (409), so no
   * grant, expiry or allowlist can bring a key back.
   */
  const changeable = async (id: string, tx: Tx, at: Date) => {
    const cred = await existing(id, tx, { forUpdate: true });
    if (cred.revoked_at) throw conflict("the credential is revoked; mint a new one");
    if (stateOf(cred, at) === "expired") throw conflict("the credential has expired, which is final; mint a new one");
    return cred;
  };

  /** Makes the change and writes its announcement in one transaction, then announces it. */
  const changeAndAnnounce = async <T>(id: string, change: CredentialChanged["change"], fn: (tx: Tx) => Promise<T>): Promise<T> => {
    const { result, event } = await store.transaction(async (tx) => {
      const result = await fn(tx);
      return { result, event: await deps.announce.record(tx, { subject: { kind: "key", id }, change }) };
    });
    await deps.announce.deliver(event);
    return result;
  };

  return {
    async provisionBootstrap(key: string): Promise<string> {
      const parsed = parseKey(key);
      if (!parsed.ok) throw new Error("svc.bootstrap-key is not a well-formed key");
      await changeAndAnnounce(parsed.key.id, "grants", async (tx) => {
        await store.upsertBootstrap(parsed.key.id, parsed.key.tenant, tx);
        await store.setGrant({ kind: "key", subjectId: parsed.key.id, scope: "*", tokens: ["*"], expiresAt: null }, tx);
      });
      return parsed.key.id;
    },

    /** `owner` and `grants`: a personal key (personal-key-service.ts), minted with its rights in one step. */
    async mint(input: { label?: string; expires?: string; nonExpiring?: boolean; owner?: string; grants?: { scope: string; tokens: string[] }[] }) {
      const created = now();
      const expires = mintExpiry(created, input);
      const key = makeKey(tenant);
      const id = keyId(key);
      const label = input.label?.trim() ? input.label.trim() : null;
      await changeAndAnnounce(id, "minted", async (tx) => {
        await store.insert({ id, tenant, label, expiresAt: expires, owner: input.owner ?? null }, tx);
        for (const g of input.grants ?? []) await store.setGrant({ kind: "key", subjectId: id, scope: g.scope, tokens: g.tokens, expiresAt: null }, tx);
      });
      return { id, key, label, created: created.toISOString(), expires: iso(expires) };
    },

    /** `expiring`: an ISO-8601 duration; only active keys whose expiry lies within it from now. */
    async list(opts: { after?: string; limit: number; expiring?: string; owner?: string }) {
      let expiringBetween: { from: Date; to: Date } | undefined;
      if (opts.expiring !== undefined) {
        const d = parseIsoDuration(opts.expiring);
        if (!d || durationMs(d) <= 0) throw invalid("expiring", `"${opts.expiring}" is not a positive ISO-8601 duration such as P14D`);
        const from = now();
        expiringBetween = { from, to: addDuration(from, d) };
      }
      const rows = await store.list({ after: opts.after, limit: opts.limit + 1, expiringBetween, owner: opts.owner });
      const page = rows.slice(0, opts.limit);
      const next = rows.length > opts.limit ? page[page.length - 1]?.id : undefined;
      return { items: await view(page), next };
    },

    async get(id: string) {
      const [v] = await view([await existing(id)]);
      return v!;
    },

    async setGrant(id: string, input: GrantInput): Promise<GrantView & { warnings?: string[] }> {
      const at = now();
      const g = readGrant(input, at);
      // Asked while the grant is written: the answer waits for the slower of the two, not both.
      const warnings = deps.repositories?.warningsFor(g.scope);
      const row = await changeAndAnnounce(id, "grants", async (tx) => {
        await changeable(id, tx, at);
        return store.setGrant({ kind: "key", subjectId: id, scope: g.scope, tokens: g.tokens, expiresAt: g.expiresAt }, tx);
      });
      return withWarnings(grantView(row), warnings);
    },

    async removeGrant(id: string, rawScope: string): Promise<void> {
      const scope = readScope(rawScope);
      await changeAndAnnounce(id, "grants", async (tx) => {
        await changeable(id, tx, now());
        if (!(await store.removeGrant("key", id, scope, tx))) throw notFound(`credential ${id} holds no grant at scope ${scope}`);
      });
    },

    /**
     * A new expiry (duration from now or instant); blank or null clears it, within the lifetime
     * cap. A key a rotation retired keeps its end: its expiry may only come sooner.
     */
    async setExpiry(id: string, expires: string | null): Promise<CredentialView> {
      const at = now();
      const text = expires?.trim() ?? "";
      let wanted: Date | null = null;
      if (text !== "") {
        const parsed = parseExpiry(text, at);
        if (!parsed) throw invalid("expires", `"${text}" is neither an ISO-8601 duration (e.g. P30D) nor an instant (e.g. 2027-01-01T00:00:00Z)`);
        if (parsed.getTime() <= at.getTime()) throw invalid("expires", "expires must lie in the future; to stop a key now, revoke it");
        wanted = parsed;
      }
      await changeAndAnnounce(id, "expiry", async (tx) => {
        const cred = await changeable(id, tx, at);
        const next = capped(at, wanted);
        if (cred.rotated_to && (next === null || (cred.expires_at !== null && next.getTime() > cred.expires_at.getTime()))) {
          throw conflict(`the credential was retired by rotation (successor ${cred.rotated_to}); its expiry can only be brought forward`);
        }
        await store.setExpiry(id, next, tx);
      });
      return this.get(id);
    },

    /** Blank, an empty list or null clears the allowlist. */
    async setAllowedAddresses(id: string, addresses: string | string[] | null): Promise<CredentialView> {
      const text = Array.isArray(addresses) ? addresses.join(",") : (addresses ?? "");
      const parsed = parseAddressList(text);
      if (!parsed.ok) throw invalid("addresses", `"${parsed.bad}" ${parsed.reason}`);
      await changeAndAnnounce(id, "allowed-ips", async (tx) => {
        await changeable(id, tx, now());
        await store.setAllowedIps(id, parsed.entries, tx);
      });
      return this.get(id);
    },

    /**
     * Mints a successor that inherits the grants and allowlist; the old key keeps working
     * until the overlap ends (never longer than it would have anyway).
     */
    async rotate(id: string, overlapText: string | null | undefined) {
      const text = overlapText?.trim() || DEFAULT_OVERLAP;
      const overlap = parseIsoDuration(text);
      if (!overlap) {
        throw invalid("overlap", `"${text}" is not an ISO-8601 duration such as P7D (PT0S ends the old key at once)`);
      }
      const created = now();
      const key = makeKey(tenant);
      const successor = keyId(key);
      const { result, events } = await store.transaction(async (tx) => {
        const cred = await changeable(id, tx, created);
        const oldEnds = addDuration(created, overlap);
        const oldExpires = cred.expires_at && cred.expires_at.getTime() < oldEnds.getTime() ? cred.expires_at : oldEnds;
        const expires = capped(created, addDuration(created, parseIsoDuration(deps.defaultLifetime ?? DEFAULT_LIFETIME)!));
        // A personal key's successor is the same person's: it stays narrowed to what they hold.
        await store.insert({ id: successor, tenant, label: cred.label, expiresAt: expires, allowedIps: cred.allowed_ips, owner: cred.owner }, tx);
        await store.retire(id, oldExpires, successor, tx);
        await store.copyGrants("key", id, successor, tx);
        const events = [
          await deps.announce.record(tx, { subject: { kind: "key", id }, change: "rotated" }),
          await deps.announce.record(tx, { subject: { kind: "key", id: successor }, change: "minted" }),
        ];
        return { result: { label: cred.label, expires, oldExpires }, events };
      });
      await deps.announce.deliver(...events);
      return {
        id: successor,
        key,
        label: result.label,
        created: created.toISOString(),
        expires: iso(result.expires),
        predecessor: { id, expires: iso(result.oldExpires) },
      };
    },

    async recordUsage(batch: KeyUsageBatch): Promise<void> {
      if (!deps.trackUsage) return;
      const rows = batch
        .filter((u) => /^[0-9a-f]{64}$/.test(u.id) && Number.isInteger(u.count) && u.count > 0 && !Number.isNaN(Date.parse(u.lastUsed)))
        .map((u) => ({ id: u.id, count: u.count, lastUsed: new Date(u.lastUsed), address: u.address.slice(0, 64) }));
      await store.recordUsage(rows);
    },

    /** Any key, in any state, may be revoked: it ends a key, never brings one back. */
    async revoke(id: string): Promise<void> {
      await changeAndAnnounce(id, "revoked", async (tx) => {
        await existing(id, tx, { forUpdate: true });
        await store.revoke(id, now(), tx);
      });
    },

    /**
     * What the gateway needs to decide a request: never the secret (it is not stored). A personal
     * key holds its own grants narrowed to what its owner holds now (directly and through groups),
     * and depends on the owner and their groups, so a change to any of them drops it from every
     * gateway's cache (credential.changed) and the next request is decided on the narrowed rights.
     */
    async resolve(id: string): Promise<KeyResolution | undefined> {
      const row = await store.findById(id);
      if (!row) return undefined;
      const at = now();
      const own = (await store.grantsOf("key", [id])).map(grantView);
      let grants = own;
      let dependsOn: KeyResolution["dependsOn"];
      if (row.owner !== null) {
        const held = await heldGrants({ credentials: store, subjects: deps.subjects }, row.owner);
        grants = intersectGrants(own, held.grants.map((g) => grantView(g.row)), at.getTime()).map((g) => ({ ...g, tokens: [...g.tokens] }));
        dependsOn = [{ kind: "person", id: row.owner }, ...held.groups.map((name) => ({ kind: "group" as const, id: name }))];
      }
      return {
        id,
        tenant: row.tenant,
        state: stateOf(row, at),
        expires: iso(row.expires_at),
        allowedAddresses: row.allowed_ips,
        grants,
        label: row.label,
        ...(dependsOn ? { dependsOn } : {}),
        owner: row.owner,
      };
    },
  };
}

export type CredentialService = ReturnType<typeof credentialServiceFactory>;
