import { readFileSync } from "node:fs";
import { parseKey, isTenant } from "@svc/keys";
import { isPersonId, isRepositoryName, parseAnonymousRights, PERSON_ID_RULE, type GrantSpec } from "@svc/grants";
import { parseAddressList } from "./addresses.js";
import { parseSettingDuration, parseIsoDuration, durationMs } from "./duration.js";

/**
 * One loader for every service. A setting `svc.x-y.z` is read, first match wins, from:
 *   1. a `-Dsvc.x-y.z=value` argument,
 *   2. the environment variable `SVC_X_Y_Z` (upper-case, dots and hyphens as underscores),
 *   3. the properties file named by `svc.config-file` (`-D` or `SVC_CONFIG_FILE`),
 *   4. the default.
 * Every value is validated; a bad one refuses start-up with a message naming the setting and
 * where it came from, never echoing a secret.
 */
export class SettingsError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid settings:\n  - ${problems.join("\n  - ")}`);
    this.name = "SettingsError";
  }
}

type Parser<T> = (raw: string) => { ok: true; value: T } | { ok: false; reason: string };

interface SettingDef<T> {
  name: string;
  parse: Parser<T>;
  default: T;
  secret?: boolean;
}

const def = <T>(name: string, parse: Parser<T>, dflt: T, secret = false): SettingDef<T> => ({ name, parse, default: dflt, secret });

const str: Parser<string> = (raw) => ({ ok: true, value: raw.trim() });
const bool: Parser<boolean> = (raw) => {
  const v = raw.trim().toLowerCase();
  if (["true", "1", "yes", "on"].includes(v)) return { ok: true, value: true };
  if (["false", "0", "no", "off"].includes(v)) return { ok: true, value: false };
  return { ok: false, reason: "must be true or false" };
};
const port: Parser<number> = (raw) => {
  const n = Number(raw.trim());
  return Number.isInteger(n) && n >= 0 && n <= 65535 ? { ok: true, value: n } : { ok: false, reason: "must be a port number 0-65535" };
};
const duration: Parser<number> = (raw) => {
  const ms = parseSettingDuration(raw);
  return ms === undefined ? { ok: false, reason: "must be a duration such as PT5M, 300s, 5m or 300 (seconds)" } : { ok: true, value: ms };
};
/** An ISO-8601 duration kept as text (applied on the calendar), blank = unset. */
const isoDuration: Parser<string | undefined> = (raw) => {
  const t = raw.trim();
  if (t === "") return { ok: true, value: undefined };
  const d = parseIsoDuration(t);
  if (!d || durationMs(d) <= 0) return { ok: false, reason: "must be a positive ISO-8601 duration such as P90D" };
  return { ok: true, value: t };
};
const url = (schemes: string[]): Parser<string> => (raw) => {
  const t = raw.trim();
  if (t === "") return { ok: true, value: "" };
  try {
    const u = new URL(t);
    if (!schemes.includes(u.protocol.replace(/:$/, ""))) return { ok: false, reason: `must be a ${schemes.join(" or ")} URL` };
    return { ok: true, value: t };
  } catch {
    return { ok: false, reason: "must be a URL" };
  }
};
/** One URL, or several separated by commas (the servers of one cluster); kept as written. */
const urlList = (schemes: string[]): Parser<string> => (raw) => {
  const parts = raw.split(",").map((p) => p.trim());
  if (parts.length === 1) return url(schemes)(raw);
  for (const part of parts) {
    if (part === "") return { ok: false, reason: "has an empty entry in its comma-separated list" };
    const r = url(schemes)(part);
    if (!r.ok) return { ok: false, reason: `${r.reason} (each entry of the comma-separated list)` };
  }
  return { ok: true, value: parts.join(",") };
};
const tenant: Parser<string> = (raw) =>
  isTenant(raw.trim()) ? { ok: true, value: raw.trim() } : { ok: false, reason: "must be 1-63 lowercase letters, digits and inner hyphens" };
const repository: Parser<string> = (raw) =>
  isRepositoryName(raw.trim()) ? { ok: true, value: raw.trim() } : { ok: false, reason: "must be a repository name (letters, digits, . _ -)" };
const key: Parser<string> = (raw) => {
  const t = raw.trim();
  if (t === "") return { ok: true, value: "" };
  const p = parseKey(t);
  return p.ok ? { ok: true, value: t } : { ok: false, reason: `is not a well-formed key (bad ${p.problem}); make one with \`pnpm keygen\`` };
};
const anonymousRights: Parser<GrantSpec[]> = (raw) => {
  const r = parseAnonymousRights(raw);
  return r.ok ? { ok: true, value: r.grants } : { ok: false, reason: r.reason };
};
const logLevel: Parser<string> = (raw) => {
  const v = raw.trim().toLowerCase();
  return ["fatal", "error", "warn", "info", "debug", "trace", "silent"].includes(v) ? { ok: true, value: v } : { ok: false, reason: "must be one of fatal, error, warn, info, debug, trace, silent" };
};
const addressList: Parser<string[]> = (raw) => {
  const r = parseAddressList(raw);
  return r.ok ? { ok: true, value: r.entries } : { ok: false, reason: `entry "${r.bad}" ${r.reason}` };
};
const admins: Parser<string[]> = (raw) => {
  const ids = raw.split(",").map((s) => s.trim()).filter((s) => s !== "");
  if (ids.includes("*")) return { ok: false, reason: "must name people one by one: a * entry would make everyone an administrator" };
  const bad = ids.find((id) => !isPersonId(id));
  if (bad !== undefined) return { ok: false, reason: `entry "${bad}" is not a person id (${PERSON_ID_RULE})` };
  return { ok: true, value: [...new Set(ids)] };
};
const count: Parser<number> = (raw) => {
  const t = raw.trim();
  return /^\d{1,9}$/.test(t) ? { ok: true, value: Number(t) } : { ok: false, reason: "must be a whole number (0 or more)" };
};
const poolSize: Parser<number> = (raw) => {
  const t = raw.trim();
  const n = Number(t);
  return /^\d{1,3}$/.test(t) && n <= 200 ? { ok: true, value: n } : { ok: false, reason: "must be a whole number from 1 to 200, or 0 for each service's own default" };
};
const oneOf =
  <T extends string>(values: readonly T[]): Parser<T> =>
  (raw) => {
    const v = raw.trim().toUpperCase() as T;
    return values.includes(v) ? { ok: true, value: v } : { ok: false, reason: `must be one of ${values.join(", ")}` };
  };
const profile: Parser<string> = (raw) => {
  const v = raw.trim().toLowerCase();
  return v === "" || v === "dev" ? { ok: true, value: v } : { ok: false, reason: "must be blank or dev" };
};
const secret: Parser<string> = (raw) => {
  const t = raw.trim();
  if (t === "") return { ok: true, value: "" };
  return t.length >= 32 ? { ok: true, value: t } : { ok: false, reason: "must be at least 32 characters" };
};

export const SETTINGS = {
  tenant: def("svc.tenant", tenant, "default"),
  repository: def("svc.repository", repository, "default"),
  auth: def("svc.auth", bool, true),
  bootstrapKey: def("svc.bootstrap-key", key, "", true),
  anonymousRights: def("svc.anonymous-rights", anonymousRights, [] as GrantSpec[]),
  readOnly: def("svc.read-only", bool, false),
  cacheTtlMs: def("svc.cache.ttl", duration, 300_000),
  shutdownGraceMs: def("svc.shutdown-grace", duration, 25_000),
  credentialDefaultLifetime: def("svc.credential-default-lifetime", isoDuration, undefined),
  credentialMaxLifetime: def("svc.credential-max-lifetime", isoDuration, undefined),
  trackKeyUsage: def("svc.track-key-usage", bool, false),
  trustedProxies: def("svc.trusted-proxies", addressList, [] as string[]),
  uiAdmins: def("svc.ui.admins", admins, [] as string[]),
  internalSecret: def("svc.internal-secret", secret, "", true),
  databaseUrl: def("svc.database-url", url(["postgres", "postgresql"]), "", true),
  redisUrl: def("svc.redis-url", url(["redis", "rediss"]), "", true),
  natsUrl: def("svc.nats-url", urlList(["nats", "tls"]), "", true),
  databasePoolSize: def("svc.database-pool-size", poolSize, 0),
  host: def("svc.host", str, "0.0.0.0"),
  port: def("svc.port", port, 8080),
  authUrl: def("svc.auth.url", url(["http", "https"]), "http://127.0.0.1:18081"),
  artifactsUrl: def("svc.artifacts.url", url(["http", "https"]), "http://127.0.0.1:18082"),
  adminUrl: def("svc.admin.url", url(["http", "https"]), "http://127.0.0.1:18083"),
  notifierUrl: def("svc.notifier.url", url(["http", "https"]), "http://127.0.0.1:18084"),
  walkerUrl: def("svc.walker.url", url(["http", "https"]), "http://127.0.0.1:18085"),
  filesystemRoot: def("svc.filesystem-root", str, ""),
  logLevel: def("svc.log-level", logLevel, "info"),
  profile: def("svc.profile", profile, ""),
  rateLimit: def("svc.rate-limit", count, 6000),
  malwareAction: def("svc.malware-action", oneOf(["BLOCK", "WARN", "ALLOW"] as const), "BLOCK"),
  vulnerabilityAction: def("svc.vulnerability-action", oneOf(["BLOCK", "WARN", "ALLOW"] as const), "BLOCK"),
  vulnerabilityThreshold: def("svc.vulnerability-threshold", oneOf(["CRITICAL", "HIGH", "MEDIUM", "LOW", "NONE"] as const), "HIGH"),
  denyListAction: def("svc.deny-list-action", oneOf(["BLOCK", "WARN", "ALLOW"] as const), "BLOCK"),
  blockPrivateImportHosts: def("svc.block-private-import-hosts", bool, true),
  webhook: def("svc.webhook", bool, false),
  /** One endpoint a line; the notifier validates the line syntax at start. */
  webhookEndpoints: def("svc.webhook-endpoints", str, ""),
  /** Per endpoint; the notifier validates it at start. */
  webhookSecrets: def("svc.webhook-secrets", str, "", true),
  webhookAttempts: def("svc.webhook-attempts", count, 5),
  webhookAllowInternal: def("svc.webhook-allow-internal", bool, false),
  webhookRetryBaseMs: def("svc.webhook-retry-base", duration, 30_000),
  webhookTimeoutMs: def("svc.webhook-timeout", duration, 10_000),
  webhookHistoryMs: def("svc.webhook-history", duration, 30 * 24 * 3_600_000),
  configFile: def("svc.config-file", str, ""),
} as const;

type Defs = typeof SETTINGS;
export type Settings = { [K in keyof Defs]: Defs[K]["default"] extends infer D ? (D extends undefined ? string | undefined : D) : never } & {
  /** Where each setting came from, for messages (never the value). */
  sources: Record<string, string>;
};

export function envName(setting: string): string {
  return setting.toUpperCase().replace(/[.-]/g, "_");
}

/** `-Dsvc.x=y` arguments. */
export function systemProperties(argv: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const a of argv) {
    if (!a.startsWith("-D")) continue;
    const eq = a.indexOf("=");
    if (eq < 0) out.set(a.slice(2), "true");
    else out.set(a.slice(2, eq), a.slice(eq + 1));
  }
  return out;
}

/** Java-style properties: `key=value` or `key: value`, `#`/`!` comments, `\` line continuation. */
export function parseProperties(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    let line = (lines[i] ?? "").replace(/^\s+/, "");
    if (line === "" || line.startsWith("#") || line.startsWith("!")) continue;
    while (/(^|[^\\])(\\\\)*\\$/.test(line) && i + 1 < lines.length) {
      line = line.slice(0, -1) + (lines[++i] ?? "").replace(/^\s+/, "");
    }
    const m = /^((?:\\.|[^=:\s\\])+)\s*[=:\s]\s*(.*)$/.exec(line);
    const k = (m ? m[1]! : line).replace(/\\(.)/g, "$1");
    const v = m ? m[2]!.replace(/\\n/g, "\n").replace(/\\(.)/g, "$1") : "";
    out.set(k, v);
  }
  return out;
}

export interface LoadOptions {
  argv?: readonly string[];
  env?: NodeJS.ProcessEnv;
  readFile?: (path: string) => string;
}

export function loadSettings(opts: LoadOptions = {}): Settings {
  const argv = opts.argv ?? process.argv.slice(2);
  const env = opts.env ?? process.env;
  const readFile = opts.readFile ?? ((p: string) => readFileSync(p, "utf8"));
  const props = systemProperties(argv);
  const problems: string[] = [];
  const known = new Set(Object.values(SETTINGS).map((d) => d.name));

  const configFile = props.get("svc.config-file") ?? env.SVC_CONFIG_FILE ?? "";
  let file = new Map<string, string>();
  if (configFile.trim() !== "") {
    try {
      file = parseProperties(readFile(configFile.trim()));
    } catch (err) {
      problems.push(`svc.config-file: cannot read "${configFile}": ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  for (const [k, where] of [...[...props.keys()].map((k) => [k, "-D argument"] as const), ...[...file.keys()].map((k) => [k, `properties file ${configFile}`] as const)]) {
    if (k.startsWith("svc.") && !known.has(k)) problems.push(`${k} (${where}): unknown setting`);
  }

  const out: Record<string, unknown> = {};
  const sources: Record<string, string> = {};
  for (const [field, d] of Object.entries(SETTINGS) as [string, SettingDef<unknown>][]) {
    const en = envName(d.name);
    let raw: string | undefined;
    let source = "default";
    if (props.has(d.name)) {
      raw = props.get(d.name);
      source = `-D${d.name}`;
    } else if (env[en] !== undefined) {
      raw = env[en];
      source = `environment ${en}`;
    } else if (file.has(d.name)) {
      raw = file.get(d.name);
      source = `properties file ${configFile}`;
    }
    sources[d.name] = source;
    if (raw === undefined) {
      out[field] = d.default;
      continue;
    }
    const r = d.parse(raw);
    if (r.ok) out[field] = r.value;
    else problems.push(`${d.name} (from ${source}) ${r.reason}`);
  }

  const s = out as Omit<Settings, "sources">;
  if (problems.length === 0) {
    if (s.profile === "dev" && !isLoopback(s.host)) {
      problems.push(`svc.profile=dev is allowed only on a loopback address, but svc.host is "${s.host}" (set SVC_HOST=127.0.0.1)`);
    }
    if (s.bootstrapKey) {
      const k = parseKey(s.bootstrapKey);
      if (k.ok && k.key.tenant !== s.tenant) {
        problems.push(`svc.bootstrap-key is a key of tenant "${k.key.tenant}" but svc.tenant is "${s.tenant}"`);
      }
    }
  }
  if (problems.length > 0) throw new SettingsError(problems);
  return { ...s, sources } as Settings;
}

function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * Settings every node of a deployment must agree on. Nodes announce a digest of each (never
 * a value) so the posture can name a node that differs. Secrets, addresses and per-node
 * choices (ports, log level, store path) are left out.
 */
export const DEPLOYMENT_SETTINGS = [
  "tenant",
  "repository",
  "auth",
  "anonymousRights",
  "readOnly",
  "cacheTtlMs",
  "credentialDefaultLifetime",
  "credentialMaxLifetime",
  "trackKeyUsage",
  "uiAdmins",
  "profile",
  "rateLimit",
  "malwareAction",
  "vulnerabilityAction",
  "vulnerabilityThreshold",
  "denyListAction",
  "blockPrivateImportHosts",
  "webhook",
  "webhookEndpoints",
  "webhookAttempts",
  "webhookAllowInternal",
] as const satisfies readonly (keyof Defs)[];

export function settingName(field: keyof Defs): string {
  return SETTINGS[field].name;
}

/** Requires settings a service cannot run without, naming them. */
export function requireSettings(s: Settings, names: (keyof Defs)[]): void {
  const missing = names.filter((n) => s[n] === "" || s[n] === undefined).map((n) => SETTINGS[n].name);
  if (missing.length > 0) {
    throw new SettingsError(missing.map((m) => `${m} is required (set ${envName(m)} or -D${m}=...)`));
  }
}
