/**
 * Right tokens: `<surface>:<verb>` with surfaces repository, cache, manage and verbs read,
 * write; `<surface>:*` grants both verbs, a bare `*` grants everything. The built-in role
 * names (read-only, deploy, admin) are accepted wherever tokens are and expand to theirs.
 * Rights are held as a bit set so a request check is a mask test.
 */
export const SURFACES = ["repository", "cache", "manage"] as const;
export type Surface = (typeof SURFACES)[number];
export type Verb = "read" | "write";

export const Right = {
  repositoryRead: 1 << 0,
  repositoryWrite: 1 << 1,
  cacheRead: 1 << 2,
  cacheWrite: 1 << 3,
  manageRead: 1 << 4,
  manageWrite: 1 << 5,
} as const;
export const ALL_RIGHTS = 0b111111;

const TOKEN_BITS: Record<string, number> = {
  "repository:read": Right.repositoryRead,
  "repository:write": Right.repositoryWrite,
  "repository:*": Right.repositoryRead | Right.repositoryWrite,
  "cache:read": Right.cacheRead,
  "cache:write": Right.cacheWrite,
  "cache:*": Right.cacheRead | Right.cacheWrite,
  "manage:read": Right.manageRead,
  "manage:write": Right.manageWrite,
  "manage:*": Right.manageRead | Right.manageWrite,
  "*": ALL_RIGHTS,
};

export const ROLES: Record<string, readonly string[]> = {
  "read-only": ["cache:read", "repository:read"],
  deploy: ["cache:read", "repository:read", "cache:write", "repository:write"],
  admin: ["*"],
};

export function rightBit(surface: Surface, verb: Verb): number {
  const bits = TOKEN_BITS[`${surface}:${verb}`];
  if (bits === undefined) throw new Error(`unknown right ${surface}:${verb}`);
  return bits;
}

export type TokenResult = { ok: true; tokens: string[]; bits: number } | { ok: false; bad: string };

/**
 * Validates a list of tokens (role names allowed) and returns them normalised (roles
 * expanded, duplicates removed, in a stable order) with their bit set.
 */
export function parseTokens(input: readonly string[]): TokenResult {
  const out = new Set<string>();
  let bits = 0;
  for (const raw of input) {
    const token = typeof raw === "string" ? raw.trim() : "";
    const role = ROLES[token];
    const expanded = role ?? [token];
    for (const t of expanded) {
      const b = TOKEN_BITS[t];
      if (b === undefined) return { ok: false, bad: String(raw) };
      out.add(t);
      bits |= b;
    }
  }
  return { ok: true, tokens: [...out].sort(), bits };
}

export function tokensToBits(tokens: readonly string[]): number {
  let bits = 0;
  for (const t of tokens) bits |= TOKEN_BITS[t] ?? 0;
  return bits;
}

export function isRightToken(token: string): boolean {
  return TOKEN_BITS[token] !== undefined;
}
