import { invalid } from "@svc/contracts";
import { isRepositoryName } from "@svc/grants";
import type { MemberRow } from "../store/metadata-store.js";

/** The most members a group names: each read through the group may ask every one of them. */
export const MAX_MEMBERS = 100;

/**
 * A group's members as asked for (`members` of `POST /api/repositories` or of
 * `PUT /api/repositories/<name>/members`), checked for what needs no look-up: a list of one to
 * MAX_MEMBERS repository names, none twice, not the group itself. Answers the names in order.
 */
export function parseMembers(group: string, members: unknown): string[] {
  if (!Array.isArray(members) || members.length === 0) throw invalid("members", "members must name at least one repository, in the order the group asks them");
  if (members.length > MAX_MEMBERS) throw invalid("members", `a group has at most ${MAX_MEMBERS} members`);
  const seen = new Set<string>();
  for (const m of members) {
    if (typeof m !== "string" || !isRepositoryName(m)) throw invalid("members", `members holds ${JSON.stringify(m)}, which is not a repository name`);
    if (m === group) throw invalid("members", `a group cannot be its own member (${group})`);
    if (seen.has(m)) throw invalid("members", `members names ${m} twice: a group asks each member once`);
    seen.add(m);
  }
  return members as string[];
}

/**
 * Refuses members (400 naming `members`) that the group cannot serve, as they are when the group
 * is written: each must exist (its removal not begun), be of the group's format, and be a hosted
 * or proxy repository: a group of groups is not served (Nexus allows one; here a read through a
 * group asks its members' own indexes once each, never a chain of groups).
 */
export function membersRefusal(group: string, format: string, members: readonly string[], found: readonly MemberRow[]): void {
  const byName = new Map(found.map((r) => [r.name, r]));
  for (const name of members) {
    const m = byName.get(name);
    if (!m || m.removing) throw invalid("members", `no repository named ${name}${m ? " (its removal has begun)" : ""}: a group's members must exist`);
    if (m.type === "group") throw invalid("members", `${name} is a group repository: a group's members are hosted or proxy repositories (a group of groups is not served)`);
    if (m.format !== format) throw invalid("members", `${name} is a ${m.format} repository: the members of ${format} group ${group} are ${format} repositories`);
  }
}
