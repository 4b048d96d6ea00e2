import { makeKey, keyId, parseKey } from "@svc/keys";
import { parseScope, parseTokens } from "@svc/grants";
import { conflict, invalid, notFound, type CredentialChanged } from "@svc/contracts";
import { addDuration, parseExpiry, parseIsoDuration } from "@svc/kit";
import type { CredentialRow, CredentialStore, GrantRow } from "../store/credential-store.js";

const DEFAULT_LIFETIME = "P90D";

export interface CredentialView {
  id: string;
  label: string | null;
  created: string;
  expires: string | null;
  state: "active" | "expired" | "revoked";
  revoked: string | null;
  allowedAddresses: string[];
  grants: GrantView[];
}

export interface GrantView {
  scope: string;
  tokens: string[];
  expires: string | null;
}

/** What the gateway needs to decide a request: never the secret (it is not stored). */
export interface Resolution {
  id: string;
  tenant: string;
  state: CredentialView["state"];
  expires: string | null;
  allowedAddresses: string[];
  grants: GrantView[];
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function stateOf(row: CredentialRow, now: Date): CredentialView["state"] {
  if (row.revoked_at) return "revoked";
  if (row.expires_at && row.expires_at.getTime() <= now.getTime()) return "expired";
  return "active";
}

const grantView = (g: GrantRow): GrantView => ({ scope: g.scope, tokens: g.tokens, expires: iso(g.expires_at) });

export interface CredentialServiceDeps {
  store: CredentialStore;
  tenant: string;
  defaultLifetime: string | undefined;
  maxLifetime: string | undefined;
  publish: (change: Omit<CredentialChanged, "id" | "time" | "tenant">) => void;
  now?: () => Date;
}

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
    return rows.map((r) => ({
      id: r.id,
      label: r.label,
      created: r.created_at.toISOString(),
      expires: iso(r.expires_at),
      state: stateOf(r, at),
      revoked: iso(r.revoked_at),
      allowedAddresses: r.allowed_ips,
      grants: grants.filter((g) => g.subject_id === r.id).map(grantView),
    }));
  };

  const existing = async (id: string) => {
    const row = await store.findById(id);
    if (!row || row.tenant !== tenant) throw notFound(`no credential with id ${id}`);
    return row;
  };

  return {
    async provisionBootstrap(key: string): Promise<string> {
      const parsed = parseKey(key);
      if (!parsed.ok) throw new Error("svc.bootstrap-key is not a well-formed key");
      await store.transaction(async (tx) => {
        await store.upsertBootstrap(parsed.key.id, parsed.key.tenant, tx);
        await store.setGrant({ kind: "key", subjectId: parsed.key.id, scope: "*", tokens: ["*"], expiresAt: null }, tx);
      });
      deps.publish({ subject: { kind: "key", id: parsed.key.id }, change: "grants" });
      return parsed.key.id;
    },

    async mint(input: { label?: string; expires?: string; nonExpiring?: boolean }) {
      const created = now();
      const expires = mintExpiry(created, input);
      const key = makeKey(tenant);
      const id = keyId(key);
      const label = input.label?.trim() ? input.label.trim() : null;
      await store.insert({ id, tenant, label, expiresAt: expires });
      deps.publish({ subject: { kind: "key", id }, change: "minted" });
      return { id, key, label, created: created.toISOString(), expires: iso(expires) };
    },

    async list(opts: { after?: string; limit: number }) {
      const rows = await store.list({ after: opts.after, limit: opts.limit + 1 });
      const page = rows.slice(0, opts.limit);
      const next = rows.length > opts.limit ? page[page.length - 1]?.id : undefined;
      return { items: await view(page), next };
    },

    async get(id: string) {
      const [v] = await view([await existing(id)]);
      return v!;
    },

    async setGrant(id: string, input: { scope: string; tokens: string[]; expires?: string }): Promise<GrantView> {
      const scope = parseScope(input.scope);
      if (!scope.ok) throw invalid("scope", scope.reason);
      if (input.tokens.length === 0) throw invalid("tokens", "give at least one right token; to remove rights, delete the grant");
      const tokens = parseTokens(input.tokens);
      if (!tokens.ok) throw invalid("tokens", `"${tokens.bad}" is not a right token or role (use <surface>:<verb>, <surface>:*, *, read-only, deploy or admin)`);
      let expiresAt: Date | null = null;
      const text = input.expires?.trim() ?? "";
      if (text !== "") {
        const at = parseExpiry(text, now());
        if (!at) throw invalid("expires", `"${text}" is neither an ISO-8601 duration nor an instant`);
        if (at.getTime() <= now().getTime()) throw invalid("expires", "expires must lie in the future");
        expiresAt = at;
      }
      const row = await store.transaction(async (tx) => {
        const cred = await store.findById(id, tx, { forUpdate: true });
        if (!cred || cred.tenant !== tenant) throw notFound(`no credential with id ${id}`);
        if (cred.revoked_at) throw conflict("the credential is revoked; mint a new one");
        return store.setGrant({ kind: "key", subjectId: id, scope: scope.text, tokens: tokens.tokens, expiresAt }, tx);
      });
      deps.publish({ subject: { kind: "key", id }, change: "grants" });
      return grantView(row);
    },

    async removeGrant(id: string, rawScope: string): Promise<void> {
      const scope = parseScope(rawScope);
      if (!scope.ok) throw invalid("scope", scope.reason);
      await existing(id);
      const removed = await store.removeGrant("key", id, scope.text);
      if (!removed) throw notFound(`credential ${id} holds no grant at scope ${scope.text}`);
      deps.publish({ subject: { kind: "key", id }, change: "grants" });
    },

    async revoke(id: string): Promise<void> {
      await existing(id);
      await store.revoke(id, now());
      deps.publish({ subject: { kind: "key", id }, change: "revoked" });
    },

    async resolve(id: string): Promise<Resolution | undefined> {
      const row = await store.findById(id);
      if (!row) return undefined;
      const grants = await store.grantsOf("key", [id]);
      return {
        id,
        tenant: row.tenant,
        state: stateOf(row, now()),
        expires: iso(row.expires_at),
        allowedAddresses: row.allowed_ips,
        grants: grants.map(grantView),
      };
    },
  };
}

export type CredentialService = ReturnType<typeof credentialServiceFactory>;
