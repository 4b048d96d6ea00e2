/**
 * The catalog of NATS subjects and their payloads. Subjects are versioned per kind:
 * `svc.<tenant>.<kind>.v1`. Publishers are typed from this map; subscribers validate with
 * the matching parser and set aside what does not parse.
 */
export interface CredentialChanged {
  /** Event id, unique per change. */
  id: string;
  time: string;
  tenant: string;
  /**
   * What changed: a key's grants, expiry, allowlist or state; a person's or group's rights; a
   * console session that ended (signed out or removed: `id` is the session id, the SHA-256 hex of
   * its cookie value, published by the console so every gateway forgets it at once).
   */
  subject: { kind: "key" | "person" | "group" | "session"; id: string };
  change: "minted" | "revoked" | "grants" | "expiry" | "allowed-ips" | "rotated" | "removed" | "members" | "ended";
  /**
   * Only on a membership change (`change: "members"`): the one person who joined or left. An
   * announcement names what changed, never everyone it touches, so its size never grows with a
   * group (a consumer that needs a group's members pages through `/api/groups/<name>/members`).
   * Group grant changes and removals carried every member here before; they no longer do.
   */
  affected?: string[];
}

/** Who caused an artifact event: never a secret, only an id. */
export interface Actor {
  kind: "key" | "person" | "anonymous" | "system";
  /** Key id (SHA-256 hex), person id, a service name for system actors, "" for anonymous. */
  id: string;
}

/** Fields every artifact event carries. */
export interface ArtifactEventBase {
  /** Event id (UUID), unique per event: consumers handle a redelivered event once by it. */
  id: string;
  /** ISO-8601 instant the change became durable. */
  time: string;
  tenant: string;
  repository: string;
  /** Repository-relative path, no leading slash. */
  path: string;
  /** Bytes; for a removal, the size of what was removed. */
  size: number;
  /** `sha256:<hex>` of the content (of what was removed, for a removal). */
  digest: string;
  actor: Actor;
  /**
   * The package file this artifact is, in a repository with a package format (absent on raw
   * artifacts): consumers that care about packages read these, the rest keep reading `path`.
   */
  package?: PackageCoordinates;
}

/** A package file's coordinates in its format: `npm`, `lodash` (or `@scope/name`), `4.17.21`, `lodash-4.17.21.tgz`. */
export interface PackageCoordinates {
  format: string;
  name: string;
  version: string;
  file: string;
}

export interface ArtifactPublished extends ArtifactEventBase {
  kind: "artifact.published";
  /** true when an existing artifact was replaced. */
  replaced: boolean;
}
export interface ArtifactRemoved extends ArtifactEventBase {
  kind: "artifact.removed";
  /** Why: "request" (a client's DELETE), "retention" (a walk's retention policy) or "collected" (a walk's garbage collection: an OCI blob no manifest references). */
  reason: "request" | "retention" | "collected";
}
export interface ArtifactHeld extends ArtifactEventBase {
  kind: "artifact.held";
  reason: string;
}
export interface ArtifactReleased extends ArtifactEventBase {
  kind: "artifact.released";
  reason: string;
}
export interface ArtifactFinding extends ArtifactEventBase {
  kind: "artifact.finding";
  finding: { type: "malware" | "vulnerability" | "deny-list" | "license"; severity: "critical" | "high" | "medium" | "low" | "info"; summary: string; reference?: string };
}

export type ArtifactEvent = ArtifactPublished | ArtifactRemoved | ArtifactHeld | ArtifactReleased | ArtifactFinding;
export const ARTIFACT_EVENT_KINDS = ["artifact.published", "artifact.removed", "artifact.held", "artifact.released", "artifact.finding"] as const;
export type ArtifactEventKind = (typeof ARTIFACT_EVENT_KINDS)[number];

export interface EventCatalog {
  "credential.changed": CredentialChanged;
  "artifact.published": ArtifactPublished;
  "artifact.removed": ArtifactRemoved;
  "artifact.held": ArtifactHeld;
  "artifact.released": ArtifactReleased;
  "artifact.finding": ArtifactFinding;
}
export type EventKind = keyof EventCatalog;

export const EVENT_VERSION = "v1";

export function subjectFor(tenant: string, kind: EventKind): string {
  return `svc.${tenant}.${kind}.${EVENT_VERSION}`;
}

/** JetStream stream that keeps every event of a tenant. */
export function streamFor(tenant: string): string {
  return `SVC_${tenant.replace(/[^A-Za-z0-9]/g, "_").toUpperCase()}`;
}

const CHANGES = new Set(["minted", "revoked", "grants", "expiry", "allowed-ips", "rotated", "removed", "members", "ended"]);

const ACTOR_KINDS = new Set(["key", "person", "anonymous", "system"]);
const SEVERITIES = new Set(["critical", "high", "medium", "low", "info"]);
const FINDING_TYPES = new Set(["malware", "vulnerability", "deny-list", "license"]);

/** Checks the fields every artifact event has, and the kind. */
function artifactBase(v: unknown, kind: ArtifactEventKind): Record<string, unknown> | undefined {
  if (typeof v !== "object" || v === null) return undefined;
  const e = v as Record<string, unknown>;
  const a = e.actor as Record<string, unknown> | undefined;
  if (e.kind !== kind) return undefined;
  for (const f of ["id", "time", "tenant", "repository", "path", "digest"]) if (typeof e[f] !== "string") return undefined;
  if (typeof e.size !== "number" || !Number.isFinite(e.size) || e.size < 0) return undefined;
  if (!/^sha256:[0-9a-f]{64}$/.test(e.digest as string)) return undefined;
  if (!a || typeof a.id !== "string" || !ACTOR_KINDS.has(a.kind as string)) return undefined;
  if (e.package !== undefined) {
    const p = e.package as Record<string, unknown> | null;
    if (typeof p !== "object" || p === null || !["format", "name", "version", "file"].every((f) => typeof p[f] === "string")) return undefined;
  }
  return e;
}

export const eventParsers: { [K in EventKind]: (value: unknown) => EventCatalog[K] | undefined } = {
  "artifact.published": (v) => {
    const e = artifactBase(v, "artifact.published");
    return e && typeof e.replaced === "boolean" ? (e as unknown as ArtifactPublished) : undefined;
  },
  "artifact.removed": (v) => {
    const e = artifactBase(v, "artifact.removed");
    return e && (e.reason === "request" || e.reason === "retention" || e.reason === "collected") ? (e as unknown as ArtifactRemoved) : undefined;
  },
  "artifact.held": (v) => {
    const e = artifactBase(v, "artifact.held");
    return e && typeof e.reason === "string" ? (e as unknown as ArtifactHeld) : undefined;
  },
  "artifact.released": (v) => {
    const e = artifactBase(v, "artifact.released");
    return e && typeof e.reason === "string" ? (e as unknown as ArtifactReleased) : undefined;
  },
  "artifact.finding": (v) => {
    const e = artifactBase(v, "artifact.finding");
    const f = e?.finding as Record<string, unknown> | undefined;
    if (!e || !f || !FINDING_TYPES.has(f.type as string) || !SEVERITIES.has(f.severity as string) || typeof f.summary !== "string") return undefined;
    return e as unknown as ArtifactFinding;
  },
  "credential.changed": (v) => {
    if (typeof v !== "object" || v === null) return undefined;
    const e = v as Record<string, unknown>;
    const s = e.subject as Record<string, unknown> | undefined;
    if (typeof e.id !== "string" || typeof e.time !== "string" || typeof e.tenant !== "string") return undefined;
    if (!s || typeof s.id !== "string" || !["key", "person", "group", "session"].includes(s.kind as string)) return undefined;
    if (typeof e.change !== "string" || !CHANGES.has(e.change)) return undefined;
    if (e.affected !== undefined && !(Array.isArray(e.affected) && e.affected.every((x) => typeof x === "string"))) return undefined;
    return e as unknown as CredentialChanged;
  },
};
