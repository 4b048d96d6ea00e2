import type { CredentialStore } from "../store/credential-store.js";
import type { SubjectStore } from "../store/subject-store.js";

export interface HeldGrantsDeps {
  credentials: Pick<CredentialStore, "grantsOf">;
  subjects: Pick<SubjectStore, "groupsOf">;
}

/** A person's own grants and their groups', each with where it comes from; lapsed ones too (the caller decides). */
export async function heldGrants(deps: HeldGrantsDeps, id: string) {
  const groups = await deps.subjects.groupsOf(id);
  const direct = (await deps.credentials.grantsOf("person", [id])).map((g) => ({ row: g, via: "direct" }));
  const viaGroups = (await deps.credentials.grantsOf("group", groups)).map((g) => ({ row: g, via: `group:${g.subject_id}` }));
  return { groups, grants: [...direct, ...viaGroups] };
}
