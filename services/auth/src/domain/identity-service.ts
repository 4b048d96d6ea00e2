import { invalid, type PersonResolution, type Principal, type ResolutionDependency } from "@svc/contracts";
import { PERSON_ID_RULE, isPersonId } from "@svc/grants";
import type { CredentialStore } from "../store/credential-store.js";
import type { SubjectStore } from "../store/subject-store.js";
import { heldGrants } from "./held-grants.js";
import { activeGrants, grantView, type GrantView } from "./grant-input.js";

/** GET /api/me: who the caller is, and every grant they hold now with where it comes from. */
export interface WhoAmI {
  kind: "key" | "person";
  id: string;
  tenant: string;
  label?: string;
  /** `via`: "key" (a key's own), "direct" (granted to the person) or "group:<name>". */
  grants: (GrantView & { via: string })[];
}

/**
 * Who a caller is, as the gateway and the caller see it: a signed-in person's resolution for
 * the gateway's rights cache, and the caller's own view of themselves.
 */
export function identityServiceFactory(deps: { credentials: Pick<CredentialStore, "findById" | "grantsOf">; subjects: Pick<SubjectStore, "groupsOf" | "findPrincipal">; tenant: string; now?: () => Date }) {
  const { credentials, subjects, tenant } = deps;
  const now = deps.now ?? (() => new Date());

  /** A person's own grants and their groups', each with where it comes from; every grant, lapsed ones included (the caller decides). */
  const personGrants = (id: string) => heldGrants({ credentials, subjects }, id);

  return {
    /**
     * GET /internal/people/:id. A person nobody granted anything resolves to no grants (a
     * signed-in person need not be known here yet); it still depends on the person, so a first
     * grant drops it from every gateway's cache.
     */
    async resolvePerson(id: string): Promise<PersonResolution> {
      if (!isPersonId(id)) throw invalid("id", PERSON_ID_RULE);
      const { groups, grants } = await personGrants(id);
      const dependsOn: ResolutionDependency[] = [{ kind: "person", id }, ...groups.map((name) => ({ kind: "group" as const, id: name }))];
      return { id, tenant, grants: grants.map((g) => grantView(g.row)), dependsOn };
    },

    /** undefined for a caller that is neither a key nor a person (anonymous). */
    async whoAmI(principal: Principal): Promise<WhoAmI | undefined> {
      const at = now();
      if (principal.kind === "key") {
        const row = await credentials.findById(principal.id);
        if (!row) return undefined;
        const grants = activeGrants(await credentials.grantsOf("key", [principal.id]), at).map((g) => ({ ...grantView(g), via: "key" }));
        return { kind: "key", id: row.id, tenant: row.tenant, ...(row.label ? { label: row.label } : {}), grants };
      }
      if (principal.kind === "person") {
        const { grants } = await personGrants(principal.id);
        const label = (await subjects.findPrincipal(principal.id))?.label;
        const active = new Set(activeGrants(grants.map((g) => g.row), at));
        return {
          kind: "person",
          id: principal.id,
          tenant: principal.tenant,
          ...(label ? { label } : {}),
          grants: grants.filter((g) => active.has(g.row)).map((g) => ({ ...grantView(g.row), via: g.via })),
        };
      }
      return undefined;
    },
  };
}

export type IdentityService = ReturnType<typeof identityServiceFactory>;
