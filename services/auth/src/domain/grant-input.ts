import { parseScope, parseTokens } from "@svc/grants";
import { invalid } from "@svc/contracts";
import { parseExpiry } from "@svc/kit";
import type { GrantRow } from "../store/credential-store.js";

export interface GrantInput {
  scope: string;
  tokens: string[];
  expires?: string | null;
}

export interface GrantView {
  scope: string;
  tokens: string[];
  expires: string | null;
}

/** Validates a grant request the same way for keys, people and groups. */
export function readGrant(input: GrantInput, now: Date): { scope: string; tokens: string[]; expiresAt: Date | null } {
  const scope = parseScope(input.scope);
  if (!scope.ok) throw invalid("scope", scope.reason);
  if (input.tokens.length === 0) throw invalid("tokens", "give at least one right token; to remove rights, delete the grant");
  const tokens = parseTokens(input.tokens);
  if (!tokens.ok) throw invalid("tokens", `"${tokens.bad}" is not a right token or role (use <surface>:<verb>, <surface>:*, *, read-only, deploy or admin)`);
  let expiresAt: Date | null = null;
  const text = input.expires?.trim() ?? "";
  if (text !== "") {
    const at = parseExpiry(text, now);
    if (!at) throw invalid("expires", `"${text}" is neither an ISO-8601 duration (e.g. P30D) nor an instant (e.g. 2027-01-01T00:00:00Z)`);
    if (at.getTime() <= now.getTime()) throw invalid("expires", "expires must lie in the future");
    expiresAt = at;
  }
  return { scope: scope.text, tokens: tokens.tokens, expiresAt };
}

export function readScope(raw: string): string {
  const scope = parseScope(raw);
  if (!scope.ok) throw invalid("scope", scope.reason);
  return scope.text;
}

export const grantView = (g: GrantRow): GrantView => ({ scope: g.scope, tokens: g.tokens, expires: g.expires_at ? g.expires_at.toISOString() : null });

/** Grants that have not lapsed at `now`. */
export const activeGrants = (rows: GrantRow[], now: Date) => rows.filter((g) => g.expires_at === null || g.expires_at.getTime() > now.getTime());
