import { Right, compileGrants, parseTokens } from "@svc/grants";

/** The rights a console page looks at to decide which forms to offer. */
export type RightName = "manage:read" | "manage:write" | "repository:write";

const BITS: Record<RightName, number> = { "manage:read": Right.manageRead, "manage:write": Right.manageWrite, "repository:write": Right.repositoryWrite };

/** A grant as `GET /api/me` lists it. */
export interface HeldGrant {
  scope: string;
  tokens: readonly string[];
  expires: string | null;
}

/**
 * Whether the signed-in person holds `right`, from the grants `GET /api/me` answered for this
 * page: over the whole deployment (`*`), or, with `repository`, anywhere in that repository.
 * It only decides what the page offers; the gateway still decides every request, so a form
 * shown by mistake is refused and one hidden by mistake is only a missing button.
 */
export function personRights(grants: readonly HeldGrant[], now = Date.now()) {
  const compiled = compileGrants(
    grants.map((g) => {
      const parsed = parseTokens(g.tokens);
      return { scope: g.scope, tokens: parsed.ok ? parsed.tokens : [], expires: g.expires };
    }),
  ).filter((g) => g.expiresAt > now);
  return (right: RightName, repository = "*"): boolean =>
    compiled.some(
      (g) => (g.bits & BITS[right]) !== 0 && (g.scope.repository === "*" || g.scope.repository === repository) && (repository !== "*" || g.scope.prefix === ""),
    );
}

/** Holds nothing: the answer for a person whose rights could not be read. */
export const holdsNothing = (): boolean => false;
