import { parseTokens } from "./rights.js";
import { isRepositoryName } from "./scope.js";

export interface GrantSpec {
  scope: string;
  tokens: string[];
}

/**
 * `svc.anonymous-rights`: a comma-separated list of `repository:read` (every repository),
 * `<repository>=repository:read` (one repository), `<surface>:*` or `*`. Any right token is
 * accepted after an optional `<repository>=`. Returns the keyless caller's grants.
 */
export function parseAnonymousRights(value: string): { ok: true; grants: GrantSpec[] } | { ok: false; reason: string } {
  const byScope = new Map<string, Set<string>>();
  for (const rawItem of value.split(",")) {
    const item = rawItem.trim();
    if (item === "") continue;
    const eq = item.indexOf("=");
    const scope = eq < 0 ? "*" : item.slice(0, eq).trim();
    const token = eq < 0 ? item : item.slice(eq + 1).trim();
    if (scope !== "*" && !isRepositoryName(scope)) return { ok: false, reason: `"${scope}" is not a repository name` };
    const parsed = parseTokens([token]);
    if (!parsed.ok || ["read-only", "deploy", "admin"].includes(token)) {
      return { ok: false, reason: `"${token}" is not a right token (use <surface>:<verb>, <surface>:* or *)` };
    }
    const set = byScope.get(scope) ?? new Set<string>();
    for (const t of parsed.tokens) set.add(t);
    byScope.set(scope, set);
  }
  return { ok: true, grants: [...byScope].map(([scope, set]) => ({ scope, tokens: [...set].sort() })) };
}
