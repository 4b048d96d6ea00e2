import { forbidden, invalid, notFound } from "@svc/contracts";
import { bitsToTokens, parseTokens, rightsOver } from "@svc/grants";
import type { CredentialStore } from "../store/credential-store.js";
import type { SubjectStore } from "../store/subject-store.js";
import type { CredentialService } from "./credential-service.js";
import { grantView, readGrant } from "./grant-input.js";
import { heldGrants } from "./held-grants.js";

export interface PersonalKeyInput {
  label?: string;
  /** ISO-8601 duration or instant; absent: the default lifetime. Always within svc.credential-max-lifetime. */
  expires?: string;
  /** All the person's rights, now and as they change. */
  all?: boolean;
  /** Or some of them: each must lie within what the person holds over that scope now. */
  grants?: { scope: string; tokens: string[] }[];
}

const OWN_RIGHTS = "a personal key holds at most your own rights";

/**
 * Personal keys: a signed-in person mints keys for themselves, with no manage right. A key holds
 * the rights chosen at minting (some of the person's, or all of them as `*`), and at every use
 * only those the person still holds (credential-service.ts `resolve`): a right the person loses
 * is gone from the key on every gateway at once, and comes back if the person is given it again.
 * Removing the person revokes their keys. Administrators see them in /api/credentials (`owner`).
 */
export function personalKeyServiceFactory(deps: {
  credentials: Pick<CredentialService, "mint" | "list" | "revoke">;
  store: Pick<CredentialStore, "grantsOf" | "findById">;
  subjects: Pick<SubjectStore, "groupsOf" | "ensurePrincipal">;
  now?: () => Date;
}) {
  const now = deps.now ?? (() => new Date());

  /** The grants to write on the key, each checked against what the person holds now. */
  const chosenGrants = async (person: string, input: PersonalKeyInput) => {
    const at = now();
    const held = (await heldGrants({ credentials: deps.store, subjects: deps.subjects }, person)).grants.map((g) => grantView(g.row));
    if (input.all) {
      if (input.grants?.length) throw invalid("grants", "give either all: true or grants, not both");
      if (!held.some((g) => g.expires === null || Date.parse(g.expires) > at.getTime())) {
        throw forbidden(`you hold no rights yet, so a personal key would hold none: ask an administrator to grant them to ${person}`);
      }
      return [{ scope: "*", tokens: ["*"] }];
    }
    if (!input.grants?.length) throw invalid("grants", 'choose the rights the key holds (grants: [{"scope": "<repository>", "tokens": ["repository:read"]}]), or all: true for all your rights');
    return input.grants.map((raw) => {
      const g = readGrant({ scope: raw.scope, tokens: raw.tokens }, at);
      const wanted = parseTokens(g.tokens);
      const missing = (wanted.ok ? wanted.bits : 0) & ~rightsOver(g.scope, held, at.getTime());
      if (missing !== 0) throw forbidden(`you do not hold ${bitsToTokens(missing).join(", ")} over ${g.scope}: ${OWN_RIGHTS}`);
      return { scope: g.scope, tokens: g.tokens };
    });
  };

  return {
    async mint(person: string, input: PersonalKeyInput) {
      const grants = await chosenGrants(person, input);
      // Listed among the people from its first key on, so an administrator finds its keys there.
      await deps.subjects.ensurePrincipal(person, undefined);
      const minted = await deps.credentials.mint({ label: input.label, expires: input.expires, owner: person, grants });
      return { ...minted, grants };
    },

    list(person: string, page: { after?: string; limit: number }) {
      return deps.credentials.list({ ...page, owner: person });
    },

    /** Only the person's own keys: another's is "no such key", not "not yours". */
    async revoke(person: string, id: string): Promise<void> {
      const row = await deps.store.findById(id);
      if (!row || row.owner !== person) throw notFound(`you hold no personal key with id ${id}`);
      await deps.credentials.revoke(id);
    },
  };
}

export type PersonalKeyService = ReturnType<typeof personalKeyServiceFactory>;
