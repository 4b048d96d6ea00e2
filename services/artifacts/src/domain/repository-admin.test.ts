import { describe, expect, it } from "vitest";
import type { MemberRow, MembersCheck, RepositoryDetail } from "../store/metadata-store.js";
import { MAX_MEMBERS, membersRefusal, parseMembers } from "./group-members.js";
import { repositoryAdminFactory } from "./repository-admin.js";

const detail = (name: string, format: string, type: string, extra: Partial<RepositoryDetail> = {}): RepositoryDetail => ({
  name,
  format,
  type,
  created: new Date(0),
  upstreamUrl: null,
  members: type === "group" ? [] : null,
  groups: [],
  artifacts: 0,
  bytes: 0,
  quotaBytes: null,
  usedBytes: 0,
  scopeFromPath: false,
  ...extra,
});

/** Repositories in memory, as the metadata store keeps them: its group writes run the check on the members that exist. */
function fakeMetadata(initial: RepositoryDetail[]) {
  const repos = new Map(initial.map((r) => [r.name, r]));
  const rowsOf = (members: readonly string[]): MemberRow[] =>
    members.flatMap((m) => {
      const r = repos.get(m);
      return r ? [{ name: r.name, format: r.format, type: r.type, removing: false }] : [];
    });
  const groupsOf = (name: string) => [...repos.values()].filter((r) => r.members?.includes(name)).map((r) => r.name);
  return {
    repos,
    async createRepository(name: string, format: string, _proxy?: unknown, quotaBytes?: number, scopeFromPath?: boolean) {
      if (repos.has(name)) return false;
      repos.set(name, detail(name, format, "hosted", { quotaBytes: quotaBytes ?? null, scopeFromPath: scopeFromPath === true }));
      return true;
    },
    async setScopeFromPath(name: string, on: boolean) {
      const r = repos.get(name);
      if (r) r.scopeFromPath = on;
      return r !== undefined;
    },
    async setQuota(name: string, quotaBytes: number | null) {
      const r = repos.get(name);
      if (r) r.quotaBytes = quotaBytes;
      return r !== undefined;
    },
    async createGroup(name: string, format: string, members: readonly string[], check: MembersCheck) {
      if (repos.has(name)) return false;
      check(rowsOf(members));
      repos.set(name, detail(name, format, "group", { members: [...members] }));
      return true;
    },
    async setMembers(name: string, members: readonly string[], check: MembersCheck) {
      const r = repos.get(name);
      if (r?.type === "group") {
        check(rowsOf(members));
        r.members = [...members];
      }
      return r?.type;
    },
    async repository(name: string) {
      const r = repos.get(name);
      return r ? { ...r, groups: groupsOf(name) } : undefined;
    },
    async closeRepository(name: string, mayClose: (r: RepositoryDetail) => void) {
      const r = repos.get(name);
      if (!r) return undefined;
      mayClose({ ...r, groups: groupsOf(name) });
      return r;
    },
    async dropRepository(name: string) {
      for (const g of groupsOf(name)) repos.get(g)!.members = repos.get(g)!.members!.filter((m) => m !== name);
      return repos.delete(name);
    },
    async page() {
      return [];
    },
  };
}

const setUp = (initial: RepositoryDetail[]) => {
  const metadata = fakeMetadata(initial);
  const announced: { repository: string; scopeFromPath: boolean }[] = [];
  const admin = repositoryAdminFactory({
    announce: (c) => announced.push(c),
    metadata,
    blobs: { readOnly: false },
    artifacts: { remove: async () => true },
    list: { refresh: async () => {} },
    formats: ["raw", "npm", "maven", "pypi"],
    proxyFormats: ["npm"],
  });
  return { admin, metadata, announced };
};
const actor = { kind: "key" as const, id: "admin" };
const refusal = (field: string, detail: string | RegExp) => expect.objectContaining({ status: 400, field, message: expect.stringMatching(detail) });

describe("group repositories: members", () => {
  it("are one or more repository names, none twice, not the group itself", () => {
    expect(parseMembers("g", ["a", "b"])).toEqual(["a", "b"]);
    expect(() => parseMembers("g", [])).toThrow(refusal("members", "at least one repository"));
    expect(() => parseMembers("g", undefined)).toThrow(refusal("members", "at least one repository"));
    expect(() => parseMembers("g", "a")).toThrow(refusal("members", "at least one repository"));
    expect(() => parseMembers("g", ["a", "b", "a"])).toThrow(refusal("members", "names a twice"));
    expect(() => parseMembers("g", ["a", "g"])).toThrow(refusal("members", "its own member"));
    expect(() => parseMembers("g", ["a", "../x"])).toThrow(refusal("members", "not a repository name"));
    expect(() => parseMembers("g", Array.from({ length: MAX_MEMBERS + 1 }, (_, i) => `m${i}`))).toThrow(refusal("members", `at most ${MAX_MEMBERS}`));
  });

  it("must exist, be of the group's format, and be hosted or proxy repositories", () => {
    const found: MemberRow[] = [
      { name: "npm-a", format: "npm", type: "hosted", removing: false },
      { name: "npmjs", format: "npm", type: "proxy", removing: false },
      { name: "libs", format: "maven", type: "hosted", removing: false },
      { name: "all-npm", format: "npm", type: "group", removing: false },
      { name: "going", format: "npm", type: "hosted", removing: true },
    ];
    expect(() => membersRefusal("g", "npm", ["npm-a", "npmjs"], found)).not.toThrow();
    expect(() => membersRefusal("g", "npm", ["npm-a", "nope"], found)).toThrow(refusal("members", "no repository named nope"));
    expect(() => membersRefusal("g", "npm", ["going"], found)).toThrow(refusal("members", "no repository named going \\(its removal has begun\\)"));
    expect(() => membersRefusal("g", "npm", ["npm-a", "libs"], found)).toThrow(refusal("members", "libs is a maven repository: the members of npm group g are npm repositories"));
    expect(() => membersRefusal("g", "npm", ["all-npm"], found)).toThrow(refusal("members", "all-npm is a group repository: a group's members are hosted or proxy repositories"));
  });
});

describe("group repositories: the admin API", () => {
  const existing = () => [detail("npm-a", "npm", "hosted"), detail("npm-b", "npm", "hosted"), detail("npmjs", "npm", "proxy"), detail("libs", "maven", "hosted")];

  it("creates a group with its members in order; members or upstream with another type are refused naming the field", async () => {
    const { admin } = setUp(existing());
    const g = await admin.create("all-npm", "npm", { type: "group", members: ["npmjs", "npm-a"] });
    expect(g).toMatchObject({ name: "all-npm", type: "group", members: ["npmjs", "npm-a"] });
    await expect(admin.create("x", "npm", { type: "hosted", members: ["npm-a"] })).rejects.toThrow(refusal("members", 'only with "type": "group"'));
    await expect(admin.create("x", "npm", { members: ["npm-a"] })).rejects.toThrow(refusal("members", 'only with "type": "group"'));
    await expect(admin.create("x", "npm", { type: "group", members: ["npm-a"], upstream: { url: "https://registry.npmjs.org/" } })).rejects.toThrow(refusal("upstream", 'only with "type": "proxy"'));
    await expect(admin.create("x", "npm", { type: "group" })).rejects.toThrow(refusal("members", "at least one"));
    await expect(admin.create("x", "npm", { type: "group", members: ["npm-a", "libs"] })).rejects.toThrow(refusal("members", "libs is a maven repository"));
    await expect(admin.create("x", "npm", { type: "group", members: ["all-npm"] })).rejects.toThrow(refusal("members", "all-npm is a group repository"));
    await expect(admin.create("x", "npm", { type: "federated" })).rejects.toThrow(refusal("type", "hosted, proxy or group"));
    await expect(admin.create("all-npm", "npm", { type: "group", members: ["npm-a"] })).rejects.toThrow(expect.objectContaining({ status: 409 }));
  });

  it("changes a group's members with the same checks; a repository that is not a group has none to change", async () => {
    const { admin } = setUp(existing());
    await admin.create("all-npm", "npm", { type: "group", members: ["npm-a"] });
    expect(await admin.setMembers("all-npm", ["npm-b", "npm-a"])).toMatchObject({ members: ["npm-b", "npm-a"] });
    await expect(admin.setMembers("all-npm", ["npm-b", "npm-b"])).rejects.toThrow(refusal("members", "twice"));
    await expect(admin.setMembers("all-npm", ["libs"])).rejects.toThrow(refusal("members", "libs is a maven repository"));
    expect((await admin.show("all-npm")).members).toEqual(["npm-b", "npm-a"]);
    await expect(admin.setMembers("npm-a", ["npm-b"])).rejects.toThrow(expect.objectContaining({ status: 409, message: "npm-a is a hosted repository: only a group repository has members" }));
    await expect(admin.setMembers("nothing", ["npm-b"])).rejects.toThrow(expect.objectContaining({ status: 404 }));
  });

  it("refuses to remove a member while a group names it (409 naming the group); forced, it leaves the group", async () => {
    const { admin, metadata } = setUp(existing());
    await admin.create("all-npm", "npm", { type: "group", members: ["npm-a", "npm-b"] });
    await expect(admin.remove("npm-a", false, actor)).rejects.toThrow(expect.objectContaining({ status: 409, message: expect.stringContaining("npm-a is a member of group all-npm") }));
    expect(metadata.repos.has("npm-a")).toBe(true);
    await admin.remove("npm-a", true, actor);
    expect(metadata.repos.has("npm-a")).toBe(false);
    expect((await admin.show("all-npm")).members).toEqual(["npm-b"]);
    // The group itself goes like any repository; its members stay.
    await admin.remove("all-npm", false, actor);
    expect(metadata.repos.has("npm-b")).toBe(true);
  });
});

describe("storage quotas: the admin API", () => {
  it("takes a positive whole number of bytes at creation and in a change, null removing it; anything else is refused naming quotaBytes", async () => {
    const { admin } = setUp([detail("npm-a", "npm", "hosted")]);
    expect(await admin.create("capped", "raw", { quotaBytes: 1000 })).toMatchObject({ quotaBytes: 1000 });
    expect(await admin.setQuota("npm-a", 5)).toMatchObject({ quotaBytes: 5 });
    expect(await admin.setQuota("npm-a", null)).toMatchObject({ quotaBytes: null });
    for (const bad of [0, -1, 1.5, "100", true, {}, Number.MAX_SAFE_INTEGER + 1]) {
      await expect(admin.setQuota("npm-a", bad)).rejects.toThrow(refusal("quotaBytes", "positive whole number of bytes"));
      await expect(admin.create("other", "raw", { quotaBytes: bad })).rejects.toThrow(refusal("quotaBytes", "positive whole number of bytes"));
    }
    await expect(admin.setQuota("nothing", 5)).rejects.toThrow(expect.objectContaining({ status: 404 }));
  });

  it("refuses a quota on a group, which holds no files of its own", async () => {
    const { admin } = setUp([detail("npm-a", "npm", "hosted")]);
    await expect(admin.create("all-npm", "npm", { type: "group", members: ["npm-a"], quotaBytes: 10 })).rejects.toThrow(refusal("quotaBytes", "set a quota on its members"));
    await admin.create("all-npm", "npm", { type: "group", members: ["npm-a"] });
    await expect(admin.setQuota("all-npm", 10)).rejects.toThrow(refusal("quotaBytes", "set a quota on its members"));
  });
});

describe("authorising by the repository the path names (scopeFromPath)", () => {
  it("is off unless asked at creation, switches on and off, and every change is announced to the gateways", async () => {
    const { admin, announced } = setUp([]);
    expect(await admin.create("plain", "npm")).toMatchObject({ scopeFromPath: false });
    expect(await admin.create("npm-team", "npm", { scopeFromPath: true })).toMatchObject({ scopeFromPath: true });
    expect(await admin.setScopeFromPath("plain", true)).toMatchObject({ scopeFromPath: true });
    expect(await admin.setScopeFromPath("npm-team", false)).toMatchObject({ scopeFromPath: false });
    await admin.remove("plain", false, actor);
    expect(announced).toEqual([
      { repository: "plain", scopeFromPath: false },
      { repository: "npm-team", scopeFromPath: true },
      { repository: "plain", scopeFromPath: true },
      { repository: "npm-team", scopeFromPath: false },
      { repository: "plain", scopeFromPath: false },
    ]);
    await expect(admin.setScopeFromPath("gone", true)).rejects.toThrow(expect.objectContaining({ status: 404 }));
  });
});
