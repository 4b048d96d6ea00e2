import { LRUCache } from "lru-cache";
import type { KeyResolution, PersonResolution, ResolutionDependency } from "@svc/contracts";
import { compileGrants, type CompiledGrant } from "@svc/grants";
import { addressMatcher, type AddressMatcher } from "@svc/kit";

/** What the gateway knows about a key, or a signed-in person, compiled for per-request checks. */
export interface KeyRights {
  /** Absent for a key. */
  kind?: "person";
  /** The key id, or the person id. */
  id: string;
  tenant: string;
  revoked: boolean;
  /** Epoch ms the key expires at; Infinity when it never does; NaN (unreadable) counts as expired. */
  expiresAt: number;
  /** The source-address allowlist, or null when the key may be used from anywhere. */
  allowedFrom: AddressMatcher | null;
  grants: CompiledGrant[];
  /** The people and groups (`person:<id>`, `group:<name>`) whose change must drop this entry. */
  dependsOn?: string[];
  /** A key's label, when it has one: log lines and the audit trail name the key by it. */
  label?: string;
  /** A personal key's person (npm whoami names them). */
  owner?: string;
}

const dependencyKey = (d: ResolutionDependency) => `${d.kind}:${d.id}`;

export function compileResolution(doc: KeyResolution): KeyRights {
  return {
    id: doc.id,
    tenant: doc.tenant,
    revoked: doc.state === "revoked",
    expiresAt: doc.expires === null ? Infinity : Date.parse(doc.expires),
    allowedFrom: doc.allowedAddresses.length > 0 ? addressMatcher(doc.allowedAddresses) : null,
    grants: compileGrants(doc.grants),
    dependsOn: (doc.dependsOn ?? []).map(dependencyKey),
    ...(doc.label ? { label: doc.label } : {}),
    ...(doc.owner ? { owner: doc.owner } : {}),
  };
}

/** A person's rights: their own grants and their groups'; never revoked or expired (their session is, see session-cache.ts). */
export function compilePerson(doc: PersonResolution): KeyRights {
  return { kind: "person", id: doc.id, tenant: doc.tenant, revoked: false, expiresAt: Infinity, allowedFrom: null, grants: compileGrants(doc.grants), dependsOn: doc.dependsOn.map(dependencyKey) };
}

/** Persons share the cache with keys under an entry id no key id (64 hex digits) can be. */
export const PERSON_ENTRY = "person:";
export const personEntry = (personId: string) => PERSON_ENTRY + personId;

export type Lookup = (id: string) => Promise<KeyRights | null>;

/** The one "no such key" entry: remembering an unknown key allocates nothing per key but its slot. */
const UNKNOWN: { readonly value: null } = Object.freeze({ value: null });

/**
 * Per-node cache of key rights for `svc.cache.ttl` (0 = off). Unknown keys are remembered
 * briefly too (negative caching, `negativeTtlMs`, at most `svc.cache.ttl`), so a flood of one
 * made-up key asks the auth service once per window, not once per request. They are kept apart
 * from known keys, in a smaller cache of their own, so a flood of many different made-up keys
 * can push out only other made-up keys, never the keys of real callers. Concurrent misses for
 * one key share a single lookup. `evict` makes a change effective at once;
 * `evictDependents` drops only the keys whose rights come from a changed person or group.
 */
export function rightsCacheFactory(opts: { ttlMs: number; lookup: Lookup; max?: number; negativeTtlMs?: number; negativeMax?: number }) {
  const { ttlMs, lookup } = opts;
  const negativeTtl = Math.min(ttlMs, opts.negativeTtlMs ?? 10_000);
  // Keys by the person or group they depend on, kept in step with the cache as entries go.
  const dependents = new Map<string, Set<string>>();
  const unindex = (id: string, entry: { value: KeyRights }) => {
    for (const d of entry.value.dependsOn ?? []) {
      const ids = dependents.get(d);
      ids?.delete(id);
      if (ids?.size === 0) dependents.delete(d);
    }
  };
  const cache = ttlMs > 0 ? new LRUCache<string, { value: KeyRights }>({ max: opts.max ?? 100_000, ttl: ttlMs, ttlAutopurge: false, dispose: (entry, id) => unindex(id, entry) }) : undefined;
  const unknown = ttlMs > 0 ? new LRUCache<string, typeof UNKNOWN>({ max: opts.negativeMax ?? 10_000, ttl: negativeTtl, ttlAutopurge: false }) : undefined;
  const inflight = new Map<string, Promise<KeyRights | null>>();
  let hits = 0;
  let misses = 0;
  // The unknown-key part's own share of those: answers "no such key" from memory, and lookups that found none.
  let unknownHits = 0;
  let unknownAnswers = 0;
  // Bumped on every eviction: a lookup that started before an eviction must not refill the cache with stale data.
  let generation = 0;

  const load = (id: string): Promise<KeyRights | null> => {
    const running = inflight.get(id);
    if (running) return running;
    const gen = generation;
    const p = lookup(id)
      .then((value) => {
        if (gen === generation) {
          if (value === null) {
            unknownAnswers++;
            unknown?.set(id, UNKNOWN);
          }
          else if (cache) {
            cache.set(id, { value });
            for (const d of value.dependsOn ?? []) dependents.set(d, (dependents.get(d) ?? new Set()).add(id));
          }
        }
        return value;
      })
      .finally(() => inflight.get(id) === p && inflight.delete(id));
    inflight.set(id, p);
    return p;
  };

  return {
    /** Cached value synchronously when present (the hot path), else undefined. */
    peek(id: string): { value: KeyRights | null } | undefined {
      const known = cache?.get(id);
      if (known) {
        hits++;
        return known;
      }
      const hit = unknown?.get(id);
      if (hit) {
        hits++;
        unknownHits++;
      }
      return hit;
    },
    get(id: string): Promise<KeyRights | null> {
      misses++;
      return load(id);
    },
    evict(id: string): void {
      generation++;
      cache?.delete(id);
      unknown?.delete(id);
      inflight.delete(id);
    },
    /** Drops the keys that depend on a person or group; every other entry stays. */
    evictDependents(dependency: ResolutionDependency): number {
      generation++;
      const ids = [...(dependents.get(dependencyKey(dependency)) ?? [])];
      for (const id of ids) {
        cache?.delete(id);
        inflight.delete(id);
      }
      return ids.length;
    },
    /** Drops every signed-in person's rights, and the personal keys narrowed to a person's (other keys stay). */
    evictPersons(): void {
      generation++;
      for (const id of [...(cache?.keys() ?? [])]) if (id.startsWith(PERSON_ENTRY)) cache?.delete(id);
      for (const ids of [...dependents.values()]) for (const id of [...ids]) cache?.delete(id);
    },
    clear(): void {
      generation++;
      cache?.clear();
      unknown?.clear();
      inflight.clear();
    },
    stats: () => ({ hits, misses, size: (cache?.size ?? 0) + (unknown?.size ?? 0) }),
    /** The two parts apart (GET /api/caches): keys and persons known, and keys known not to exist. */
    parts: () => ({
      known: { hits: hits - unknownHits, misses, size: cache?.size ?? 0, ttlMs },
      unknown: { hits: unknownHits, misses: unknownAnswers, size: unknown?.size ?? 0, ttlMs: negativeTtl },
    }),
  };
}

export type RightsCache = ReturnType<typeof rightsCacheFactory>;
