import { usageError } from "./cli-errors.js";
import type { OptionSpec } from "./command-types.js";
import { when } from "./table-output.js";

export interface Grant {
  scope: string;
  tokens: string[];
  expires: string | null;
  via?: string;
}

/** `<scope>=<token>[,<token>...]`, e.g. `default:com/acme=deploy` or `*=repository:read,cache:read`. */
export function parseGrantSpec(spec: string): { scope: string; tokens: string[] } {
  const at = spec.lastIndexOf("=");
  const scope = spec.slice(0, at).trim();
  const tokens = spec
    .slice(at + 1)
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean);
  if (at <= 0 || !scope || tokens.length === 0) throw usageError(`A grant is <scope>=<token>[,<token>...] (e.g. default:com/acme=deploy), not "${spec}".`);
  return { scope, tokens };
}

/** The body of a grant call from `<scope> <token>...` arguments and --expires. */
export function grantBody(args: string[], expires: string | undefined): { scope: string; tokens: string[]; expires?: string } {
  const [scope, ...tokens] = args;
  const flat = tokens.flatMap((t) => t.split(",")).map((t) => t.trim()).filter(Boolean);
  if (!scope || flat.length === 0) throw usageError("Give a scope and at least one right token or role (e.g. `default deploy` or `* manage:read`).");
  return expires ? { scope, tokens: flat, expires } : { scope, tokens: flat };
}

/** `scope=tokens (until ...)` for each grant, `;`-separated; `-` for none. */
export function grantsCell(grants: readonly Grant[]): string {
  if (grants.length === 0) return "-";
  return grants.map((g) => `${g.scope}=${g.tokens.join(",")}${g.expires ? ` (until ${when(g.expires)})` : ""}${g.via && g.via !== "direct" ? ` via ${g.via}` : ""}`).join("; ");
}

/** A scope as one path segment of the grant-removal routes. */
export const scopeSegment = (scope: string) => encodeURIComponent(scope);

export const grantExpiresOption: Record<string, OptionSpec> = {
  expires: { type: "string", value: "when", description: "when the grant lapses: an ISO-8601 duration from now (P30D, PT12H) or an instant; default never" },
};

export const GRANT_ARGS = "<scope> <token>...";
export const GRANT_HELP = "a scope is a repository, `<repository>:<path prefix>` or `*`; tokens are rights (repository:read, cache:write, manage:*, *) or roles (read-only, deploy, admin)";
