import { createHash, createHmac } from "node:crypto";
import type { ServiceName, SettingDef } from "./settings.js";
import type { SettingOrigin } from "@svc/contracts";

/**
 * What a process runs with, setting by setting, for the deployment's settings table
 * (`GET /api/settings`): each node reports this over NATS and the admin service lines the nodes
 * up. It is built once by the loader, which is the only place that sees a secret's text: a
 * secret is reported as set or not set, and its digest is keyed by the internal secret every
 * node of the deployment shares, so nodes can be compared without anything on the wire a
 * listener could test guesses against.
 */
export type { SettingOrigin };

export interface SettingInForce {
  name: string;
  from: SettingOrigin;
  secret: boolean;
  /** Whether the setting holds a value (not blank). */
  set: boolean;
  /** The value as written (or the documented default); absent for a secret. */
  value?: string;
  /** Short digest of the parsed value: equal digests, same value. */
  digest: string;
}

type Catalog = Record<string, SettingDef<unknown>>;

function defaultText(d: SettingDef<unknown>): string {
  // "5m" reads better than 300000; prose such as "required (artifacts, walker)" is not a value.
  if (d.defaultText !== undefined && /^[A-Za-z0-9.]+$/.test(d.defaultText) && d.defaultText !== "required") return d.defaultText;
  const v = d.default;
  if (v === undefined) return "";
  return Array.isArray(v) ? v.map(String).join(",") : String(v);
}

const isSet = (v: unknown): boolean => !(v === undefined || v === "" || (Array.isArray(v) && v.length === 0));

export function describeInForce(catalog: Catalog, values: Record<string, unknown>, origins: Record<string, { from: SettingOrigin; text?: string }>): SettingInForce[] {
  const key = typeof values.internalSecret === "string" ? values.internalSecret : "";
  return Object.entries(catalog).map(([field, d]) => {
    const value = values[field];
    const origin = origins[d.name] ?? { from: "default" as const };
    const json = JSON.stringify(value ?? null);
    // Keyed where the value holds a secret, so a digest cannot be tested against guesses.
    const keyed = () => (key === "" ? (isSet(value) ? "set" : "unset") : createHmac("sha256", key).update(`${d.name}\n${json}`).digest("hex").slice(0, 16));
    if (d.secret) return { name: d.name, from: origin.from, secret: true, set: isSet(value), digest: keyed() };
    return {
      name: d.name,
      from: origin.from,
      secret: false,
      set: isSet(value),
      // A partly secret value (d.shown) arrives here already masked by the loader.
      value: origin.text ?? defaultText(d),
      digest: d.shown ? keyed() : createHash("sha256").update(json).digest("hex").slice(0, 16),
    };
  });
}

/** The settings a process of `service` acts on (the catalog's `readBy`); a service the catalog does not name reports them all. */
export function settingsReadBy(catalog: Catalog, inForce: readonly SettingInForce[], service: string): SettingInForce[] {
  const byName = new Map(Object.values(catalog).map((d) => [d.name, d]));
  const known = Object.values(catalog).some((d) => d.readBy !== "every" && d.readBy.includes(service as ServiceName));
  return inForce.filter((e) => {
    const d = byName.get(e.name);
    return !known || d === undefined || d.readBy === "every" || d.readBy.includes(service as ServiceName);
  });
}
