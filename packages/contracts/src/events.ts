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
  /** What changed: a key's grants, expiry, allowlist or state; a person's or group's rights. */
  subject: { kind: "key" | "person" | "group"; id: string };
  change: "minted" | "revoked" | "grants" | "expiry" | "allowed-ips" | "rotated" | "removed" | "members";
  /** For group changes: the members whose rights were re-derived. */
  affected?: string[];
}

export interface EventCatalog {
  "credential.changed": CredentialChanged;
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

const CHANGES = new Set(["minted", "revoked", "grants", "expiry", "allowed-ips", "rotated", "removed", "members"]);

export const eventParsers: { [K in EventKind]: (value: unknown) => EventCatalog[K] | undefined } = {
  "credential.changed": (v) => {
    if (typeof v !== "object" || v === null) return undefined;
    const e = v as Record<string, unknown>;
    const s = e.subject as Record<string, unknown> | undefined;
    if (typeof e.id !== "string" || typeof e.time !== "string" || typeof e.tenant !== "string") return undefined;
    if (!s || typeof s.id !== "string" || !["key", "person", "group"].includes(s.kind as string)) return undefined;
    if (typeof e.change !== "string" || !CHANGES.has(e.change)) return undefined;
    if (e.affected !== undefined && !(Array.isArray(e.affected) && e.affected.every((x) => typeof x === "string"))) return undefined;
    return e as unknown as CredentialChanged;
  },
};
