import { Right, compileGrants, rightsFor, type GrantSpec } from "@svc/grants";

/**
 * Whether a keyless caller may read a repository, as the gateway decides it (gateway
 * domain/admission.ts `authorize`) for a client that sends no Service-Repository-Name (cargo
 * cannot): svc.auth off lets everyone in; otherwise svc.anonymous-rights must grant
 * repository:read over `*`, or over the repository itself when svc.repository-scope-from-path,
 * or the repository's own scopeFromPath (`scopeFromPath`), authorises against the repository
 * the path names. What a format tells its clients (Cargo's `auth-required`), never a decision:
 * the gateway's is the one that admits.
 */
export function anonymousReadFactory(
  s: { auth: boolean; anonymousRights: readonly GrantSpec[]; repositoryScopeFromPath: boolean },
  scopeFromPath: (repository: string) => boolean = () => false,
): (repository: string) => boolean {
  const grants = compileGrants(s.anonymousRights);
  return (repository) => !s.auth || (rightsFor(grants, s.repositoryScopeFromPath || scopeFromPath(repository) ? repository : "*", "", Date.now()) & Right.repositoryRead) !== 0;
}
