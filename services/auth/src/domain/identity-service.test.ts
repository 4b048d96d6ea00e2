// A signed-in person's resolution (for the gateways' rights cache) and GET /api/me's answer.
import { describe, expect, it } from "vitest";
import { ServiceError } from "@svc/contracts";
import type { CredentialRow, GrantRow } from "../store/credential-store.js";
import { identityServiceFactory } from "./identity-service.js";

const T0 = new Date("2026-03-01T12:00:00Z");
const KEY = "a".repeat(64);
const grant = (subject_kind: GrantRow["subject_kind"], subject_id: string, scope: string, tokens: string[], expires_at: Date | null = null): GrantRow =>
  ({ subject_kind, subject_id, scope, tokens, expires_at, updated_at: T0 }) as GrantRow;

const GRANTS: GrantRow[] = [
  grant("key", KEY, "default", ["repository:read"]),
  grant("key", KEY, "old", ["repository:read"], new Date(T0.getTime() - 1000)),
  grant("person", "oidc/alice", "*", ["manage:read"]),
  grant("group", "ops", "*", ["manage:write"]),
  grant("group", "release", "releases", ["repository:write"], new Date("2027-01-01T00:00:00Z")),
  grant("group", "other", "*", ["*"]),
];
const MEMBERS: Record<string, string[]> = { "oidc/alice": ["ops", "release"] };

const identity = identityServiceFactory({
  tenant: "default",
  now: () => T0,
  credentials: {
    findById: async (id: string) => (id === KEY ? ({ id: KEY, tenant: "default", label: "ci" } as CredentialRow) : undefined),
    grantsOf: async (kind: GrantRow["subject_kind"], ids: string[]) => GRANTS.filter((g) => g.subject_kind === kind && ids.includes(g.subject_id)),
  },
  subjects: {
    groupsOf: async (id: string) => MEMBERS[id] ?? [],
    findPrincipal: async (id: string) => (id === "oidc/alice" ? { id, label: "Alice", created_at: T0 } : undefined),
  },
});

describe("a person's resolution", () => {
  it("holds their own grants and every group's, and depends on the person and each group", async () => {
    const r = await identity.resolvePerson("oidc/alice");
    expect(r.grants.map((g) => g.scope)).toEqual(["*", "*", "releases"]);
    expect(r.dependsOn).toEqual([{ kind: "person", id: "oidc/alice" }, { kind: "group", id: "ops" }, { kind: "group", id: "release" }]);
    expect(r.tenant).toBe("default");
  });

  it("is empty for a person nobody granted anything, and still depends on the person", async () => {
    expect(await identity.resolvePerson("oauth/42")).toEqual({ id: "oauth/42", tenant: "default", grants: [], dependsOn: [{ kind: "person", id: "oauth/42" }] });
  });

  it("refuses what is not a person id", async () => {
    await expect(identity.resolvePerson("alice")).rejects.toBeInstanceOf(ServiceError);
  });
});

describe("who am I", () => {
  it("a key: its label and its own grants still in force", async () => {
    expect(await identity.whoAmI({ kind: "key", tenant: "default", id: KEY })).toEqual({
      kind: "key",
      id: KEY,
      tenant: "default",
      label: "ci",
      grants: [{ scope: "default", tokens: ["repository:read"], expires: null, via: "key" }],
    });
  });

  it("a person: direct grants and each group's, saying which", async () => {
    const me = await identity.whoAmI({ kind: "person", tenant: "default", id: "oidc/alice" });
    expect(me).toMatchObject({ kind: "person", id: "oidc/alice", label: "Alice" });
    expect(me?.grants).toEqual([
      { scope: "*", tokens: ["manage:read"], expires: null, via: "direct" },
      { scope: "*", tokens: ["manage:write"], expires: null, via: "group:ops" },
      { scope: "releases", tokens: ["repository:write"], expires: "2027-01-01T00:00:00.000Z", via: "group:release" },
    ]);
  });

  it("a person holding nothing gets an empty list, not a refusal", async () => {
    expect(await identity.whoAmI({ kind: "person", tenant: "default", id: "oauth/42" })).toEqual({ kind: "person", id: "oauth/42", tenant: "default", grants: [] });
  });

  it("nobody for an anonymous caller", async () => {
    expect(await identity.whoAmI({ kind: "anonymous", tenant: "default", id: "" })).toBeUndefined();
  });
});
