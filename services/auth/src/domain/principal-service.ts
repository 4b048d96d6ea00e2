import { invalid, notFound } from "@svc/contracts";
import type { Transaction } from "kysely";
import { GROUP_NAME_RULE, PERSON_ID_RULE, isGroupName, isPersonId } from "@svc/grants";
import type { Announcer, CredentialChange } from "../messaging/credential-announcer.js";
import type { CredentialStore } from "../store/credential-store.js";
import type { AuthDatabase } from "../store/schema.js";
import type { SubjectStore } from "../store/subject-store.js";
import { activeGrants, grantView, readGrant, readScope, type GrantInput, type GrantView } from "./grant-input.js";
import { withWarnings, type RepositoryCheck } from "./repository-check.js";

export interface PersonView {
  id: string;
  label: string | null;
  grants: GrantView[];
}

export interface GroupView {
  name: string;
  label: string | null;
  grants: GrantView[];
  members: number;
}

export interface EffectiveRights {
  id: string;
  groups: string[];
  /** Every grant the person holds now, directly or through a group, with where it comes from. */
  grants: (GrantView & { via: string })[];
}

export interface PrincipalServiceDeps {
  credentials: CredentialStore;
  subjects: SubjectStore;
  announce: Announcer;
  /** Words a warning for a grant naming a repository that does not exist; no check when absent. */
  repositories?: Pick<RepositoryCheck, "warningsFor">;
  now?: () => Date;
}

function personId(id: unknown, field = "id"): string {
  if (typeof id !== "string" || !isPersonId(id)) throw invalid(field, PERSON_ID_RULE);
  return id;
}

function groupName(name: string): string {
  if (!isGroupName(name)) throw invalid("name", GROUP_NAME_RULE);
  return name;
}

/**
 * People and groups. A person's effective rights are their direct grants plus their groups'
 * grants, derived when asked for, so a change is visible to the next request as soon as the
 * call that made it returns; every change is also announced so gateways drop what they cached.
 * An announcement names the person or group that changed, never everyone a group reaches, so
 * its size does not grow with the group.
 */
export function principalServiceFactory(deps: PrincipalServiceDeps) {
  const { credentials: store, subjects } = deps;
  const now = deps.now ?? (() => new Date());

  /** Makes a change and writes its announcement in one transaction, then announces it. */
  const changeAndAnnounce = async <T>(fn: (tx: Transaction<AuthDatabase> | undefined) => Promise<{ result: T; change?: CredentialChange }>): Promise<T> => {
    const { result, event } = await store.transaction(async (tx) => {
      const { result, change } = await fn(tx);
      return { result, event: change ? await deps.announce.record(tx, change) : undefined };
    });
    if (event) await deps.announce.deliver(event);
    return result;
  };
  const person = (id: string, change: CredentialChange["change"]): CredentialChange => ({ subject: { kind: "person", id }, change });
  const group = (name: string, change: CredentialChange["change"], member?: string): CredentialChange => ({
    subject: { kind: "group", id: name },
    change,
    ...(member ? { affected: [member] } : {}),
  });

  const groupViews = async (rows: { name: string; label: string | null }[]): Promise<GroupView[]> => {
    const grants = await store.grantsOf("group", rows.map((r) => r.name));
    const counts = await subjects.memberCounts(rows.map((r) => r.name));
    return rows.map((r) => ({
      name: r.name,
      label: r.label,
      grants: grants.filter((g) => g.subject_id === r.name).map(grantView),
      members: counts.get(r.name) ?? 0,
    }));
  };

  const personViews = async (rows: { id: string; label: string | null }[]): Promise<PersonView[]> => {
    const grants = await store.grantsOf("person", rows.map((r) => r.id));
    return rows.map((r) => ({ id: r.id, label: r.label, grants: grants.filter((g) => g.subject_id === r.id).map(grantView) }));
  };

  return {
    /** `svc.ui.admins`: deployment-wide administration on every start; never removes anything. */
    async seedAdministrators(ids: string[]): Promise<void> {
      for (const id of ids) {
        await changeAndAnnounce(async (tx) => {
          await subjects.ensurePrincipal(id, undefined, tx);
          await store.setGrant({ kind: "person", subjectId: id, scope: "*", tokens: ["*"], expiresAt: null }, tx);
          return { result: undefined, change: person(id, "grants") };
        });
      }
    },

    async listPeople(page: { after?: string; limit: number }) {
      const rows = await subjects.listPrincipals({ after: page.after, limit: page.limit + 1 });
      const items = rows.slice(0, page.limit);
      return { items: await personViews(items), next: rows.length > page.limit ? items[items.length - 1]?.id : undefined };
    },

    async grantPerson(input: GrantInput & { id: string; label?: string }): Promise<GrantView & { warnings?: string[] }> {
      const id = personId(input.id);
      const g = readGrant(input, now());
      const warnings = deps.repositories?.warningsFor(g.scope);
      const row = await changeAndAnnounce(async (tx) => {
        await subjects.ensurePrincipal(id, input.label, tx);
        const result = await store.setGrant({ kind: "person", subjectId: id, scope: g.scope, tokens: g.tokens, expiresAt: g.expiresAt }, tx);
        return { result, change: person(id, "grants") };
      });
      return withWarnings(grantView(row), warnings);
    },

    async revokePersonGrant(rawId: unknown, rawScope: unknown): Promise<void> {
      const id = personId(rawId);
      if (typeof rawScope !== "string") throw invalid("scope", "scope is required");
      const scope = readScope(rawScope);
      await changeAndAnnounce(async (tx) => {
        if (!(await store.removeGrant("person", id, scope, tx))) throw notFound(`${id} holds no direct grant at scope ${scope}`);
        return { result: undefined, change: person(id, "grants") };
      });
    },

    /** Direct grants and metadata go, and the person's personal keys are revoked; group memberships stay. */
    async removePerson(rawId: unknown): Promise<void> {
      const id = personId(rawId);
      const { events } = await store.transaction(async (tx) => {
        const removedGrants = await subjects.removeAllGrants("person", id, tx);
        const removed = await subjects.removePrincipal(id, tx);
        const keys = await store.revokeOwnedBy(id, now(), tx);
        if (!removed && removedGrants === 0 && keys.length === 0) throw notFound(`no person ${id}`);
        const events = [await deps.announce.record(tx, person(id, "removed"))];
        for (const key of keys) events.push(await deps.announce.record(tx, { subject: { kind: "key", id: key }, change: "revoked" }));
        return { events };
      });
      await deps.announce.deliver(...events);
    },

    async effectiveRights(rawId: unknown): Promise<EffectiveRights> {
      const id = personId(rawId);
      const at = now();
      const groups = await subjects.groupsOf(id);
      const direct = activeGrants(await store.grantsOf("person", [id]), at).map((g) => ({ ...grantView(g), via: "direct" }));
      const viaGroups = activeGrants(await store.grantsOf("group", groups), at).map((g) => ({ ...grantView(g), via: `group:${g.subject_id}` }));
      if (direct.length === 0 && groups.length === 0 && !(await subjects.findPrincipal(id))) throw notFound(`no person ${id}`);
      return { id, groups, grants: [...direct, ...viaGroups] };
    },

    async listGroups(page: { after?: string; limit: number }) {
      const rows = await subjects.listGroups({ after: page.after, limit: page.limit + 1 });
      const items = rows.slice(0, page.limit);
      return { items: await groupViews(items), next: rows.length > page.limit ? items[items.length - 1]?.name : undefined };
    },

    /** One group with its grants and member count (what a group's console page heads with). */
    async group(rawName: string): Promise<GroupView> {
      const name = groupName(rawName);
      const row = await subjects.findGroup(name);
      if (!row) throw notFound(`no group ${name}`);
      return (await groupViews([row]))[0]!;
    },

    async members(rawName: string, page: { after?: string; limit: number }) {
      const name = groupName(rawName);
      if (!(await subjects.findGroup(name))) throw notFound(`no group ${name}`);
      const ids = await subjects.members(name, { after: page.after, limit: page.limit + 1 });
      const items = ids.slice(0, page.limit);
      return { items, next: ids.length > page.limit ? items[items.length - 1] : undefined };
    },

    /** Sets a group's rights at one scope; creates the group if it does not exist yet. */
    async grantGroup(rawName: string, input: GrantInput): Promise<GrantView & { warnings?: string[] }> {
      const name = groupName(rawName);
      const g = readGrant(input, now());
      const warnings = deps.repositories?.warningsFor(g.scope);
      const row = await changeAndAnnounce(async (tx) => {
        await subjects.ensureGroup(name, tx);
        await subjects.findGroup(name, tx, { forUpdate: true });
        const result = await store.setGrant({ kind: "group", subjectId: name, scope: g.scope, tokens: g.tokens, expiresAt: g.expiresAt }, tx);
        return { result, change: group(name, "grants") };
      });
      return withWarnings(grantView(row), warnings);
    },

    async revokeGroupGrant(rawName: string, rawScope: string): Promise<void> {
      const name = groupName(rawName);
      const scope = readScope(rawScope);
      await changeAndAnnounce(async (tx) => {
        if (!(await subjects.findGroup(name, tx, { forUpdate: true }))) throw notFound(`no group ${name}`);
        if (!(await store.removeGrant("group", name, scope, tx))) throw notFound(`group ${name} holds no grant at scope ${scope}`);
        return { result: undefined, change: group(name, "grants") };
      });
    },

    /** Adds a member, creating the group if absent; true when the person was not a member yet. */
    async addMember(rawName: string, rawId: unknown): Promise<boolean> {
      const name = groupName(rawName);
      const id = personId(rawId);
      return changeAndAnnounce(async (tx) => {
        await subjects.ensureGroup(name, tx);
        await subjects.ensurePrincipal(id, undefined, tx);
        const added = await subjects.addMember(name, id, tx);
        return { result: added, change: added ? group(name, "members", id) : undefined };
      });
    },

    async removeMember(rawName: string, rawId: unknown): Promise<void> {
      const name = groupName(rawName);
      const id = personId(rawId);
      await changeAndAnnounce(async (tx) => {
        if (!(await subjects.findGroup(name, tx))) throw notFound(`no group ${name}`);
        if (!(await subjects.removeMember(name, id, tx))) throw notFound(`${id} is not a member of ${name}`);
        return { result: undefined, change: group(name, "members", id) };
      });
    },

    /** Deletes the group's grants, metadata and memberships. */
    async removeGroup(rawName: string): Promise<void> {
      const name = groupName(rawName);
      await changeAndAnnounce(async (tx) => {
        if (!(await subjects.findGroup(name, tx, { forUpdate: true }))) throw notFound(`no group ${name}`);
        await subjects.removeAllGrants("group", name, tx);
        await subjects.removeGroup(name, tx);
        return { result: undefined, change: group(name, "removed") };
      });
    },
  };
}

export type PrincipalService = ReturnType<typeof principalServiceFactory>;
