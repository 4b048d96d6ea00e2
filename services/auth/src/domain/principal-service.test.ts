import { describe, expect, it } from "vitest";
import { ServiceError } from "@svc/contracts";
import type { CredentialChange } from "../messaging/credential-announcer.js";
import { recordingAnnouncer } from "../messaging/recording-announcer.js";
import type { CredentialStore, GrantRow } from "../store/credential-store.js";
import type { SubjectStore } from "../store/subject-store.js";
import { principalServiceFactory } from "./principal-service.js";

const DAY = 86_400_000;
const T0 = new Date("2026-03-01T12:00:00Z");
const ALICE = "oidc/alice";
const BOB = "oauth/bob";

/** The grant table and the people, groups and memberships of the auth schema, in memory. */
function fakeStores() {
  let grants: GrantRow[] = [];
  const people = new Map<string, string | null>();
  const groups = new Set<string>();
  const memberships: { group: string; person: string }[] = [];
  const dropGrants = (kind: GrantRow["subject_kind"], id: string, scope?: string) => {
    const before = grants.length;
    grants = grants.filter((g) => !(g.subject_kind === kind && g.subject_id === id && (scope === undefined || g.scope === scope)));
    return before - grants.length;
  };
  const credentials = {
    transaction: <T>(fn: (tx: never) => Promise<T>) => fn(undefined as never),
    async setGrant(g: { kind: GrantRow["subject_kind"]; subjectId: string; scope: string; tokens: string[]; expiresAt: Date | null }) {
      dropGrants(g.kind, g.subjectId, g.scope);
      const row: GrantRow = { subject_kind: g.kind, subject_id: g.subjectId, scope: g.scope, tokens: g.tokens, expires_at: g.expiresAt, updated_at: new Date() };
      grants.push(row);
      return row;
    },
    grantsOf: async (kind: GrantRow["subject_kind"], ids: string[]) => grants.filter((g) => g.subject_kind === kind && ids.includes(g.subject_id)).sort((a, b) => a.scope.localeCompare(b.scope)),
    removeGrant: async (kind: GrantRow["subject_kind"], id: string, scope: string) => dropGrants(kind, id, scope) > 0,
    revokeOwnedBy: async (): Promise<string[]> => [],
  };
  const membersOf = (group: string) => memberships.filter((m) => m.group === group).map((m) => m.person).sort();
  const subjects = {
    async ensurePrincipal(id: string, label: string | null | undefined) {
      if (!people.has(id) || label !== undefined) people.set(id, label ?? null);
    },
    findPrincipal: async (id: string) => (people.has(id) ? { id, label: people.get(id) ?? null, created_at: T0 } : undefined),
    listPrincipals: async (o: { after?: string; limit: number }) =>
      [...people].map(([id, label]) => ({ id, label, created_at: T0 })).sort((a, b) => a.id.localeCompare(b.id)).filter((p) => !o.after || p.id > o.after).slice(0, o.limit),
    removePrincipal: async (id: string) => people.delete(id),
    removeAllGrants: async (kind: "person" | "group", id: string) => dropGrants(kind, id),
    async ensureGroup(name: string) {
      groups.add(name);
    },
    findGroup: async (name: string) => (groups.has(name) ? { name, label: null, created_at: T0 } : undefined),
    listGroups: async (o: { after?: string; limit: number }) =>
      [...groups].sort().filter((n) => !o.after || n > o.after).slice(0, o.limit).map((name) => ({ name, label: null, created_at: T0 })),
    async removeGroup(name: string) {
      for (let i = memberships.length - 1; i >= 0; i--) if (memberships[i]!.group === name) memberships.splice(i, 1);
      return groups.delete(name);
    },
    async addMember(group: string, person: string) {
      if (memberships.some((m) => m.group === group && m.person === person)) return false;
      memberships.push({ group, person });
      return true;
    },
    async removeMember(group: string, person: string) {
      const i = memberships.findIndex((m) => m.group === group && m.person === person);
      if (i >= 0) memberships.splice(i, 1);
      return i >= 0;
    },
    members: async (group: string, o: { after?: string; limit: number }) => membersOf(group).filter((p) => !o.after || p > o.after).slice(0, o.limit),
    groupsOf: async (person: string) => memberships.filter((m) => m.person === person).map((m) => m.group).sort(),
    memberCounts: async (names: string[]) => new Map(names.map((n) => [n, membersOf(n).length] as const)),
  };
  return { credentials: credentials as unknown as CredentialStore, subjects: subjects as unknown as SubjectStore };
}

function setup() {
  let now = T0;
  const published: CredentialChange[] = [];
  const principals = principalServiceFactory({ ...fakeStores(), announce: recordingAnnouncer(published), now: () => now });
  return { principals, published, advance: (ms: number) => (now = new Date(now.getTime() + ms)) };
}

async function refusal(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ServiceError);
  return (err as ServiceError).code;
}

describe("a person's effective rights", () => {
  it("are their direct grants plus every group's grants, each with where it comes from", async () => {
    const { principals } = setup();
    await principals.grantPerson({ id: ALICE, scope: "libs", tokens: ["read-only"] });
    await principals.grantGroup("deployers", { scope: "releases", tokens: ["deploy"] });
    await principals.addMember("deployers", ALICE);
    expect(await principals.effectiveRights(ALICE)).toEqual({
      id: ALICE,
      groups: ["deployers"],
      grants: [
        { scope: "libs", tokens: ["cache:read", "repository:read"], expires: null, via: "direct" },
        { scope: "releases", tokens: ["cache:read", "cache:write", "repository:read", "repository:write"], expires: null, via: "group:deployers" },
      ],
    });
  });

  it("follow a group's grant changes at once, and lose the group's rights when the person leaves it", async () => {
    const { principals } = setup();
    await principals.addMember("ops", ALICE);
    expect((await principals.effectiveRights(ALICE)).grants).toEqual([]);
    await principals.grantGroup("ops", { scope: "*", tokens: ["admin"] });
    expect((await principals.effectiveRights(ALICE)).grants).toEqual([{ scope: "*", tokens: ["*"], expires: null, via: "group:ops" }]);
    await principals.removeMember("ops", ALICE);
    expect(await principals.effectiveRights(ALICE)).toEqual({ id: ALICE, groups: [], grants: [] });
  });

  it("leave out grants that have lapsed", async () => {
    const { principals, advance } = setup();
    await principals.grantPerson({ id: ALICE, scope: "libs", tokens: ["repository:read"], expires: "P1D" });
    await principals.grantGroup("ops", { scope: "*", tokens: ["manage:read"], expires: "PT1H" });
    await principals.addMember("ops", ALICE);
    advance(2 * 3_600_000);
    expect((await principals.effectiveRights(ALICE)).grants.map((g) => g.via)).toEqual(["direct"]);
    advance(DAY);
    expect((await principals.effectiveRights(ALICE)).grants).toEqual([]);
  });

  it("are refused for someone never seen and for an id that is not a person id", async () => {
    const { principals } = setup();
    expect(await refusal(principals.effectiveRights(BOB))).toBe("not_found");
    expect(await refusal(principals.effectiveRights("bob"))).toBe("invalid_input");
  });
});

describe("changes are announced so gateways drop what they cached", () => {
  it("a group's change names the group, not its members", async () => {
    const { principals, published } = setup();
    await principals.addMember("ops", ALICE);
    await principals.addMember("ops", BOB);
    published.length = 0;
    await principals.grantGroup("ops", { scope: "*", tokens: ["read-only"] });
    await principals.revokeGroupGrant("ops", "*");
    await principals.removeGroup("ops");
    expect(published).toEqual([
      { subject: { kind: "group", id: "ops" }, change: "grants" },
      { subject: { kind: "group", id: "ops" }, change: "grants" },
      { subject: { kind: "group", id: "ops" }, change: "removed" },
    ]);
  });

  it("an announcement's size does not grow with the group (one member against 5,000)", async () => {
    const sizes = async (members: number) => {
      const { principals, published } = setup();
      for (let i = 0; i < members; i++) await principals.addMember("ops", `oidc/member-${String(i).padStart(6, "0")}`);
      published.length = 0;
      await principals.grantGroup("ops", { scope: "*", tokens: ["read-only"] });
      await principals.revokeGroupGrant("ops", "*");
      await principals.removeGroup("ops");
      return published.map((p) => JSON.stringify(p).length);
    };
    const small = await sizes(1);
    expect(await sizes(5_000)).toEqual(small);
    for (const n of small) expect(n).toBeLessThan(200);
  });

  it("adding someone already a member changes nothing and announces nothing", async () => {
    const { principals, published } = setup();
    expect(await principals.addMember("ops", ALICE)).toBe(true);
    expect(await principals.addMember("ops", ALICE)).toBe(false);
    expect(published).toEqual([{ subject: { kind: "group", id: "ops" }, change: "members", affected: [ALICE] }]);
  });
});

describe("people and groups", () => {
  it("svc.ui.admins get deployment-wide administration on every start", async () => {
    const { principals, published } = setup();
    await principals.seedAdministrators([ALICE, BOB]);
    expect((await principals.effectiveRights(BOB)).grants).toEqual([{ scope: "*", tokens: ["*"], expires: null, via: "direct" }]);
    expect(published.map((p) => p.subject)).toEqual([
      { kind: "person", id: ALICE },
      { kind: "person", id: BOB },
    ]);
  });

  it("removing a person drops their direct grants but keeps their memberships", async () => {
    const { principals } = setup();
    await principals.grantPerson({ id: ALICE, scope: "libs", tokens: ["read-only"] });
    await principals.grantGroup("ops", { scope: "*", tokens: ["read-only"] });
    await principals.addMember("ops", ALICE);
    await principals.removePerson(ALICE);
    expect((await principals.effectiveRights(ALICE)).grants.map((g) => g.via)).toEqual(["group:ops"]);
    expect(await refusal(principals.removePerson(BOB))).toBe("not_found");
  });

  it("lists groups with their grants and member counts, a page at a time", async () => {
    const { principals } = setup();
    await principals.grantGroup("a-team", { scope: "libs", tokens: ["repository:read"] });
    await principals.addMember("b-team", ALICE);
    await principals.addMember("b-team", BOB);
    const first = await principals.listGroups({ limit: 1 });
    expect(first).toEqual({ items: [{ name: "a-team", label: null, grants: [{ scope: "libs", tokens: ["repository:read"], expires: null }], members: 0 }], next: "a-team" });
    const second = await principals.listGroups({ after: first.next, limit: 1 });
    expect(second).toEqual({ items: [{ name: "b-team", label: null, grants: [], members: 2 }], next: undefined });
  });

  it("refuses a group name with a slash, a bad grant, and removing what is not there", async () => {
    const { principals } = setup();
    expect(await refusal(principals.grantGroup("a/b", { scope: "*", tokens: ["read-only"] }))).toBe("invalid_input");
    expect(await refusal(principals.grantPerson({ id: ALICE, scope: "*", tokens: [] }))).toBe("invalid_input");
    expect(await refusal(principals.revokePersonGrant(ALICE, "libs"))).toBe("not_found");
    expect(await refusal(principals.removeMember("ops", ALICE))).toBe("not_found");
    expect(await refusal(principals.revokeGroupGrant("ops", "*"))).toBe("not_found");
  });
});
