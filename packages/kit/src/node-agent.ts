import { createHash } from "node:crypto";
import type { Bus } from "./messaging.js";
import type { LogEntry, LogRing } from "./logger.js";
import type { NodeLogEntry } from "@svc/contracts";
import type { ServiceMetrics } from "./metrics.js";
import { apiReport } from "./openapi.js";
import { DEPLOYMENT_SETTINGS, SETTINGS, settingName, type Settings } from "./settings.js";
import { settingsReadBy, type SettingInForce } from "./settings-in-force.js";

/**
 * Every process answers the deployment's control plane over NATS: its meters, its recent log
 * entries, and a heartbeat with a digest of each deployment-wide setting (never a value), so
 * the admin service can show the whole deployment and spot a node that differs.
 */
export interface ControlSubjects {
  heartbeat: string;
  metrics: string;
  logs: string;
  limits: string;
  /** "A run-time setting changed": every admin node reads the stored values again (PUT /api/settings/<name>). */
  settingsChanged: string;
  /** Each process's API description (openapi.ts). */
  openapi: string;
  /** The settings each process runs with (settings-in-force.ts: secrets only as set or not). */
  settings: string;
  /** "Clear caches on this node": every other gateway drops what it remembers of credentials and sessions. */
  caches: string;
  /** "A repository was created, changed or removed" (RepositoryScopeChange): every gateway applies its scopeFromPath at once. */
  repositories: string;
  /**
   * "What do you serve at these paths?": asked of every artifacts node by the posture's
   * comparison (services/artifacts content-report.ts answers, admin content-check.ts asks).
   */
  content: string;
}

/**
 * Control subjects belong to one deployment: they are keyed by a digest of the internal
 * secret every node of the deployment shares (never the secret itself), so deployments that
 * share a NATS server never hear each other, while a node of the deployment with another
 * tenant or other settings still does — and shows up in the posture.
 */
export function controlSubjects(internalSecret: string): ControlSubjects {
  const d = createHash("sha256").update(`svc-control:${internalSecret}`).digest("hex").slice(0, 16);
  return {
    heartbeat: `svc.control.${d}.heartbeat`,
    metrics: `svc.control.${d}.metrics`,
    logs: `svc.control.${d}.logs`,
    limits: `svc.control.${d}.limits.changed`,
    settingsChanged: `svc.control.${d}.settings.changed`,
    openapi: `svc.control.${d}.openapi`,
    settings: `svc.control.${d}.settings`,
    caches: `svc.control.${d}.caches.cleared`,
    repositories: `svc.control.${d}.repositories.changed`,
    content: `svc.control.${d}.content`,
  };
}

/**
 * The control subjects a node listens on: its own secret's, and during a rotation the other
 * accepted secret's too (svc.internal-secret-previous), so nodes on either secret still hear each
 * other. A node speaks (heartbeats, questions, announcements) on its own secret's only.
 */
export function listenedControlSubjects(settings: Pick<Settings, "internalSecret" | "internalSecretPrevious">): ControlSubjects[] {
  const own = controlSubjects(settings.internalSecret);
  return settings.internalSecretPrevious && settings.internalSecretPrevious !== settings.internalSecret ? [own, controlSubjects(settings.internalSecretPrevious)] : [own];
}

export interface Heartbeat {
  node: string;
  service: string;
  tenant: string;
  started: string;
  at: string;
  fingerprint: string;
  /** setting name -> short digest of its value */
  settings: Record<string, string>;
  /** Anything the service wants the posture to know (e.g. redis: "down"). */
  status: Record<string, string>;
}

export interface LogQuery {
  level?: number;
  text?: string;
  /** `access`: only the gateway's access lines; `other`: everything but them; unset: both. */
  category?: "access" | "other";
  /** Only the entries of processes of these services (`gateway`, `auth`, …); unset: every service. */
  services?: string[];
  /** Per-node sequence already seen. */
  after?: Record<string, number>;
  limit?: number;
}

export interface LogReply {
  node: string;
  service: string;
  entries: NodeLogEntry[];
}

/** A node's answer on the settings subject: what it runs with, of the settings its service reads. */
export interface SettingsReply {
  node: string;
  service: string;
  settings: SettingInForce[];
}

export const LEVEL_VALUES: Record<string, number> = { TRACE: 10, DEBUG: 20, INFO: 30, WARN: 40, ERROR: 50, FATAL: 60 };

/**
 * What the node agent needs of a service's settings: the deployment-wide ones, the tenant and
 * the secret that keys the control subjects, and what the loader recorded of each setting (a
 * process without it reports no settings).
 */
export type NodeAgentSettings = Pick<Settings, (typeof DEPLOYMENT_SETTINGS)[number] | "tenant" | "internalSecret" | "internalSecretPrevious"> & Partial<Pick<Settings, "inForce">>;

/** This process's answer on the settings subject. */
export function answerSettings(settings: Partial<Pick<Settings, "inForce">>, node: string, service: string): SettingsReply {
  return { node, service, settings: settingsReadBy(SETTINGS, settings.inForce ?? [], service) };
}

export function settingsDigest(settings: NodeAgentSettings): { fingerprint: string; settings: Record<string, string> } {
  const out: Record<string, string> = {};
  for (const field of DEPLOYMENT_SETTINGS) {
    out[settingName(field)] = createHash("sha256").update(JSON.stringify(settings[field] ?? null)).digest("hex").slice(0, 16);
  }
  const fingerprint = createHash("sha256").update(JSON.stringify(out)).digest("hex").slice(0, 16);
  return { fingerprint, settings: out };
}

export function matchLog(e: LogEntry, q: LogQuery): boolean {
  if (q.level !== undefined && (LEVEL_VALUES[e.level] ?? 0) < q.level) return false;
  if (q.text) {
    const needle = q.text.toLowerCase();
    if (!e.msg.toLowerCase().includes(needle) && !JSON.stringify(e).toLowerCase().includes(needle)) return false;
  }
  return true;
}

/** A node's answer to a log query: newest `limit` without a cursor, oldest after it with one. */
export function answerLogs(ring: LogRing, node: string, service: string, q: LogQuery): LogReply {
  // A node of another service answers nothing, so its entries never cross NATS.
  if (q.services && q.services.length > 0 && !q.services.includes(service)) return { node, service, entries: [] };
  const after = q.after?.[node] ?? 0;
  const limit = Math.min(Math.max(q.limit ?? 1000, 1), 1000);
  const entries = ring.list(after, q.category).filter((e) => matchLog(e, q));
  const chosen = q.after ? entries.slice(0, limit) : entries.slice(-limit);
  return { node, service, entries: chosen.map((e) => ({ ...e, node })) };
}

export function startNodeAgent(opts: {
  bus: Bus;
  settings: NodeAgentSettings;
  metrics: ServiceMetrics;
  ring: LogRing;
  status?: () => Record<string, string>;
  intervalMs?: number;
}): { stop: () => void } {
  const { bus, metrics, ring } = opts;
  const control = controlSubjects(opts.settings.internalSecret);
  const started = new Date().toISOString();
  const digest = settingsDigest(opts.settings);

  for (const listened of listenedControlSubjects(opts.settings)) {
    bus.respond(listened.metrics, async () => ({ node: metrics.node, service: metrics.service, metrics: await metrics.snapshot() }));
    bus.respond(listened.logs, (raw) => answerLogs(ring, metrics.node, metrics.service, (raw ?? {}) as LogQuery));
    bus.respond(listened.settings, () => answerSettings(opts.settings, metrics.node, metrics.service));
    // Looked up when asked: the agent starts before the service has built its app.
    bus.respond(listened.openapi, () => apiReport(metrics));
  }

  const beat = (): boolean => {
    const hb: Heartbeat = {
      node: metrics.node,
      service: metrics.service,
      tenant: opts.settings.tenant,
      started,
      at: new Date().toISOString(),
      ...digest,
      status: opts.status?.() ?? {},
    };
    return bus.announce(control.heartbeat, hb);
  };
  const timer = setInterval(beat, opts.intervalMs ?? 5000);
  timer.unref();
  // Announce as soon as NATS is up rather than waiting a whole interval.
  let first: NodeJS.Timeout | undefined;
  const early = () => {
    if (!beat()) {
      first = setTimeout(early, 250);
      first.unref();
    }
  };
  early();
  return {
    stop: () => {
      clearInterval(timer);
      clearTimeout(first);
    },
  };
}
