import { ALL_RIGHTS, SURFACES, rightBit, tokensToBits } from "./rights.js";
import { parseScope, pathUnderPrefix, type Scope } from "./scope.js";

/**
 * What a personal key holds: the rights its owner chose for it, never more than the owner holds
 * now. Both sides are sets of grants (a scope with rights and an expiry), and a request is
 * allowed when some grant of each side covers it; so the key holds, for every pair of grants
 * whose scopes overlap, the narrower scope with the rights both carry, lapsing at the earlier
 * expiry. The result is exact: a request is covered by it exactly when both sides cover it.
 */
export interface PlainGrant {
  scope: string;
  tokens: readonly string[];
  /** ISO instant; null: never lapses. */
  expires: string | null;
}

/** The tokens of a bit set, shortest form (`*`, `<surface>:*`, `<surface>:<verb>`). */
export function bitsToTokens(bits: number): string[] {
  if ((bits & ALL_RIGHTS) === ALL_RIGHTS) return ["*"];
  const out: string[] = [];
  for (const s of SURFACES) {
    const r = bits & rightBit(s, "read");
    const w = bits & rightBit(s, "write");
    if (r && w) out.push(`${s}:*`);
    else if (r) out.push(`${s}:read`);
    else if (w) out.push(`${s}:write`);
  }
  return out;
}

const scopeText = (s: Scope) => (s.prefix === "" ? s.repository : `${s.repository}:${s.prefix}`);

/** The scope both cover, or null when no request lies under both. */
export function intersectScopes(a: string, b: string): string | null {
  const pa = parseScope(a);
  const pb = parseScope(b);
  if (!pa.ok || !pb.ok) return null;
  const x = pa.scope;
  const y = pb.scope;
  let repository: string;
  if (x.repository === "*") repository = y.repository;
  else if (y.repository === "*" || y.repository === x.repository) repository = x.repository;
  else return null;
  let prefix: string;
  if (pathUnderPrefix(x.prefix, y.prefix)) prefix = x.prefix;
  else if (pathUnderPrefix(y.prefix, x.prefix)) prefix = y.prefix;
  else return null;
  return scopeText({ repository, prefix });
}

const earlier = (a: string | null, b: string | null): string | null => {
  if (a === null) return b;
  if (b === null) return a;
  return Date.parse(a) <= Date.parse(b) ? a : b;
};

/** Grants that have not lapsed at `now` (epoch ms); an unreadable expiry counts as lapsed. */
const live = (grants: readonly PlainGrant[], now: number) => grants.filter((g) => g.expires === null || Date.parse(g.expires) > now);

/** The rights of `chosen` that `held` also grants (see above); lapsed grants of either side count for nothing. */
export function intersectGrants(chosen: readonly PlainGrant[], held: readonly PlainGrant[], now: number): PlainGrant[] {
  const out = new Map<string, { bits: number; expires: string | null }>();
  for (const c of live(chosen, now)) {
    for (const h of live(held, now)) {
      const bits = tokensToBits(c.tokens) & tokensToBits(h.tokens);
      if (bits === 0) continue;
      const scope = intersectScopes(c.scope, h.scope);
      if (scope === null) continue;
      const expires = earlier(c.expires, h.expires);
      // Same scope and expiry: one grant with both rights.
      const key = `${scope}\u0000${expires ?? ""}`;
      const prev = out.get(key);
      out.set(key, { bits: (prev?.bits ?? 0) | bits, expires });
    }
  }
  return [...out].map(([key, v]) => ({ scope: key.slice(0, key.indexOf("\u0000")), tokens: bitsToTokens(v.bits), expires: v.expires }));
}

/**
 * The rights `held` grants over the whole of `scope` (every path under it): those of the grants
 * whose scope contains it. What a person may put on a personal key at that scope.
 */
export function rightsOver(scope: string, held: readonly PlainGrant[], now: number): number {
  let bits = 0;
  for (const h of live(held, now)) if (intersectScopes(scope, h.scope) === scope) bits |= tokensToBits(h.tokens);
  return bits;
}
