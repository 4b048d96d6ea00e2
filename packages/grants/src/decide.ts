import { tokensToBits } from "./rights.js";
import { parseScope, pathUnderPrefix, type Scope } from "./scope.js";

/** A grant prepared for fast checks: parsed scope, right bits and expiry in epoch ms. */
export interface CompiledGrant {
  scope: Scope;
  bits: number;
  /** Epoch ms after which the grant has lapsed; Infinity = never; NaN = unreadable (counts as lapsed). */
  expiresAt: number;
}

export interface GrantInput {
  scope: string;
  tokens: readonly string[];
  /** ISO instant, or null/undefined/"" for a grant that never lapses. */
  expires?: string | null;
}

/**
 * Compiles stored grants. A grant whose scope cannot be parsed is dropped (it can cover
 * nothing); an expiry that cannot be read back counts as expired, never as absent.
 */
export function compileGrants(grants: readonly GrantInput[]): CompiledGrant[] {
  const out: CompiledGrant[] = [];
  for (const g of grants) {
    const parsed = parseScope(g.scope);
    if (!parsed.ok) continue;
    let expiresAt = Infinity;
    if (g.expires !== null && g.expires !== undefined && g.expires !== "") {
      expiresAt = Date.parse(g.expires);
    }
    out.push({ scope: parsed.scope, bits: tokensToBits(g.tokens), expiresAt });
  }
  return out;
}

/**
 * The rights held for a request against `repository` (the one named by
 * Service-Repository-Name, or "*" when the header is absent) at `path`. With "*", only a
 * wildcard grant counts. A prefix scope counts only when `path` lies at or under it.
 */
export function rightsFor(grants: readonly CompiledGrant[], repository: string, path: string, now: number): number {
  let bits = 0;
  for (const g of grants) {
    if (!(g.expiresAt > now)) continue; // also drops NaN (unreadable expiry)
    if (g.scope.repository !== "*" && g.scope.repository !== repository) continue;
    if (!pathUnderPrefix(path, g.scope.prefix)) continue;
    bits |= g.bits;
  }
  return bits;
}

/** Rights held at the whole-deployment scope `*` (no prefix), e.g. for /api/ routes. */
export function deploymentRights(grants: readonly CompiledGrant[], now: number): number {
  let bits = 0;
  for (const g of grants) {
    if (!(g.expiresAt > now)) continue;
    if (g.scope.repository !== "*" || g.scope.prefix !== "") continue;
    bits |= g.bits;
  }
  return bits;
}

/** Union of rights held anywhere, whatever the scope. */
export function anyRights(grants: readonly CompiledGrant[], now: number): number {
  let bits = 0;
  for (const g of grants) if (g.expiresAt > now) bits |= g.bits;
  return bits;
}
