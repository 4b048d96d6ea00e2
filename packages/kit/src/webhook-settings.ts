import { isIP } from "node:net";
import { ARTIFACT_EVENT_KINDS, maskUrl, maskUrlsIn, type ArtifactEventKind } from "@svc/contracts";
import { classifyAddress, describeVerdict } from "./address-policy.js";
import { SETTINGS, type Settings } from "./settings.js";

/**
 * A webhook signing secret (Standard Webhooks): `whsec_<base64>` is the base64-decoded bytes; any
 * other text is used as its UTF-8 bytes.
 */
export const SECRET_PREFIX = "whsec_";

export type SecretResult = { ok: true; key: Buffer } | { ok: false; reason: string };

/** The shortest key accepted: shorter ones are too easy to guess offline from one delivery. */
export const MIN_SECRET_BYTES = 16;

export function parseSecret(text: string): SecretResult {
  let key: Buffer;
  if (text.startsWith(SECRET_PREFIX)) {
    const b64 = text.slice(SECRET_PREFIX.length);
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 === 1) return { ok: false, reason: `a ${SECRET_PREFIX} secret must be followed by base64` };
    key = Buffer.from(b64, "base64");
  } else {
    key = Buffer.from(text, "utf8");
  }
  if (key.length < MIN_SECRET_BYTES) return { ok: false, reason: `the secret must be at least ${MIN_SECRET_BYTES} bytes` };
  return { ok: true, key };
}

/**
 * The line syntax of `svc.webhook-endpoints` and `svc.webhook-secrets`. Entries are separated by
 * newlines or `;` (a properties file or an environment variable can hold several on one line);
 * blank entries and entries starting with `#` are skipped. Every problem names its line
 * (1-based, counting `;`-separated entries as lines) and a secret is never echoed.
 *
 *   svc.webhook-endpoints:  <URL> <events>
 *     events: `none` (every event) or event kinds separated by commas and/or spaces, written
 *     as in the event catalog (`artifact.published`) or short (`published`).
 *   svc.webhook-secrets:    <URL> <secret>
 *     URL as written in svc.webhook-endpoints; secret `whsec_<base64>` or any other text
 *     (its UTF-8 bytes), at least 16 bytes, no whitespace or `;`.
 */
export interface Endpoint {
  /** The URL as the WHATWG parser writes it; the endpoint's identity in delivery records. */
  url: string;
  /** The event kinds it receives; every kind when `none` was written. */
  kinds: ArtifactEventKind[];
  allEvents: boolean;
  /** HMAC key; deliveries are unsigned without one. */
  key?: Buffer;
}

export const SHORT_KINDS: Record<string, ArtifactEventKind> = Object.fromEntries(ARTIFACT_EVENT_KINDS.map((k) => [k.slice("artifact.".length), k]));

interface Line {
  n: number;
  text: string;
}

export function splitLines(text: string): Line[] {
  return text
    .split(/\r?\n|;/)
    .map((t, i) => ({ n: i + 1, text: t.trim() }))
    .filter((l) => l.text !== "" && !l.text.startsWith("#"));
}

/**
 * A line or URL as a message quotes it: each URL masked (its path or query may hold the
 * receiver's token, a user part a password), so start-up problems and logs never carry one.
 */
const shownLine = (text: string) => maskUrlsIn(text);

export function parseKinds(words: string[]): { ok: true; kinds: ArtifactEventKind[]; allEvents: boolean } | { ok: false; reason: string } {
  if (words.length === 0) return { ok: false, reason: "follow the URL with the events it wants (for example artifact.published) or none for every event" };
  const lower = words.map((w) => w.toLowerCase());
  if (lower.includes("none")) {
    if (lower.length > 1) return { ok: false, reason: "none means every event and cannot be combined with event names" };
    return { ok: true, kinds: [...ARTIFACT_EVENT_KINDS], allEvents: true };
  }
  const kinds: ArtifactEventKind[] = [];
  for (const w of lower) {
    const kind = (ARTIFACT_EVENT_KINDS as readonly string[]).includes(w) ? (w as ArtifactEventKind) : SHORT_KINDS[w];
    if (!kind) {
      return { ok: false, reason: `unknown event "${w}" (known: ${ARTIFACT_EVENT_KINDS.join(", ")}, or ${Object.keys(SHORT_KINDS).join(", ")}; none for every event)` };
    }
    if (!kinds.includes(kind)) kinds.push(kind);
  }
  return { ok: true, kinds, allEvents: kinds.length === ARTIFACT_EVENT_KINDS.length };
}

/** The host of a URL without IPv6 brackets. */
export const hostOf = (u: URL) => (u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname);

export function parseEndpointUrl(text: string, allowInternal: boolean): { ok: true; url: string } | { ok: false; reason: string } {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return { ok: false, reason: "is not a URL" };
  }
  if (u.protocol !== "https:" && !(allowInternal && u.protocol === "http:")) {
    return { ok: false, reason: allowInternal ? "must be an https or http URL" : "must be an https URL (http only with svc.webhook-allow-internal=true)" };
  }
  if (u.username || u.password) return { ok: false, reason: "must not carry a user or password: sign deliveries with svc.webhook-secrets instead" };
  if (u.hash) return { ok: false, reason: "must not have a #fragment" };
  const host = hostOf(u);
  if (!allowInternal && isIP(host) !== 0) {
    const v = classifyAddress(host);
    if (!v.allowed) return { ok: false, reason: `is on an address that is not public: ${describeVerdict(v)}; only public addresses are allowed unless svc.webhook-allow-internal=true` };
  }
  return { ok: true, url: u.href };
}

export function parseEndpoints(text: string, allowInternal: boolean): { endpoints: Endpoint[]; problems: string[] } {
  const endpoints: Endpoint[] = [];
  const problems: string[] = [];
  const seen = new Map<string, number>();
  for (const line of splitLines(text)) {
    const [first = "", ...rest] = line.text.split(/\s+/);
    const where = `line ${line.n} "${shownLine(line.text)}"`;
    const url = parseEndpointUrl(first, allowInternal);
    if (!url.ok) {
      problems.push(`${where}: ${maskUrl(first)} ${url.reason}`);
      continue;
    }
    const kinds = parseKinds(rest.flatMap((w) => w.split(",")).filter((w) => w !== ""));
    if (!kinds.ok) {
      problems.push(`${where}: ${kinds.reason}`);
      continue;
    }
    const earlier = seen.get(url.url);
    if (earlier !== undefined) {
      problems.push(`${where}: ${maskUrl(url.url)} is already listed on line ${earlier}`);
      continue;
    }
    seen.set(url.url, line.n);
    endpoints.push({ url: url.url, kinds: kinds.kinds, allEvents: kinds.allEvents });
  }
  return { endpoints, problems };
}

/** Secrets by endpoint URL; problems never quote a secret, only the line number and URL. */
export function parseSecrets(text: string, endpoints: readonly Endpoint[]): { keys: Map<string, Buffer>; problems: string[] } {
  const keys = new Map<string, Buffer>();
  const problems: string[] = [];
  const lineOf = new Map<string, number>();
  const known = new Set(endpoints.map((e) => e.url));
  for (const line of splitLines(text)) {
    const words = line.text.split(/\s+/);
    if (words.length !== 2) {
      problems.push(`line ${line.n}: expected "<endpoint URL> <secret>" (the secret may not contain spaces)`);
      continue;
    }
    let url: string;
    try {
      url = new URL(words[0]!).href;
    } catch {
      problems.push(`line ${line.n}: does not start with an endpoint URL`);
      continue;
    }
    const shown = maskUrl(url);
    if (!known.has(url)) {
      problems.push(`line ${line.n}: ${shown} is not one of the endpoints in svc.webhook-endpoints`);
      continue;
    }
    const earlier = lineOf.get(url);
    if (earlier !== undefined) {
      problems.push(`line ${line.n}: a second secret for ${shown} (the first is on line ${earlier})`);
      continue;
    }
    const s = parseSecret(words[1]!);
    if (!s.ok) {
      problems.push(`line ${line.n} (${shown}): ${s.reason}`);
      continue;
    }
    lineOf.set(url, line.n);
    keys.set(url, s.key);
  }
  return { keys, problems };
}

/**
 * Both settings together; `problems` are ready for a SettingsError, each prefixed with the
 * setting's name and where it came from.
 */
export function parseWebhookSettings(opts: {
  endpoints: string;
  secrets: string;
  allowInternal: boolean;
  sourceOf?: (setting: string) => string;
}): { endpoints: Endpoint[]; problems: string[] } {
  const from = (name: string) => (opts.sourceOf ? `${name} (from ${opts.sourceOf(name)})` : name);
  const e = parseEndpoints(opts.endpoints, opts.allowInternal);
  const s = parseSecrets(opts.secrets, e.endpoints);
  const problems = [...e.problems.map((p) => `${from("svc.webhook-endpoints")} ${p}`), ...s.problems.map((p) => `${from("svc.webhook-secrets")} ${p}`)];
  const endpoints = e.endpoints.map((ep) => {
    const key = s.keys.get(ep.url);
    return key ? { ...ep, key } : ep;
  });
  return { endpoints, problems };
}

/** The webhook settings as the notifier applies them: the endpoint lines read, the durations checked. */
export interface WebhookConfig {
  /** svc.webhook: deliver at all. */
  enabled: boolean;
  endpoints: Endpoint[];
  /** svc.webhook-attempts: retries after the first try, before a delivery is set aside. */
  retries: number;
  allowInternal: boolean;
  /** svc.webhook-retry-base: the pause before the first retry (each next one doubles). */
  retryBaseMs: number;
  /** svc.webhook-timeout: the longest one delivery attempt may take, connection included. */
  timeoutMs: number;
  /** svc.webhook-history: how long finished deliveries (and their events) are kept; 0 = for ever. */
  historyMs: number;
}

/** The settings the webhook configuration is read from. */
export type WebhookSettingFields = Pick<
  Settings,
  "webhook" | "webhookEndpoints" | "webhookSecrets" | "webhookAttempts" | "webhookAllowInternal" | "webhookRetryBaseMs" | "webhookTimeoutMs" | "webhookHistoryMs" | "sources"
>;

/** The webhook settings, which are read together: a change of one is checked with the others in force. */
export const WEBHOOK_SETTINGS = ["webhook", "webhookEndpoints", "webhookSecrets", "webhookAttempts", "webhookAllowInternal", "webhookRetryBaseMs", "webhookTimeoutMs", "webhookHistoryMs"] as const satisfies readonly (keyof Settings)[];

const LIMITS = {
  retryBase: { name: "svc.webhook-retry-base", min: 10, max: 3_600_000 },
  timeout: { name: "svc.webhook-timeout", min: 100, max: 300_000 },
} as const;

/**
 * The webhook settings read together, the way the notifier reads them at start and again after
 * each run-time change, and the way `PUT /api/settings/<name>` checks a new value against the
 * others in force. `problems` name the setting and where its value came from (`sourceOf`,
 * by default the operator's source or `default`); a secret is never quoted.
 */
export function readWebhookSettings(s: WebhookSettingFields, sourceOf: (setting: string) => string = (name) => s.sources[name] ?? "default"): { config: WebhookConfig; problems: string[] } {
  const problems: string[] = [];
  const within = (value: number, d: (typeof LIMITS)[keyof typeof LIMITS]) => {
    if (value < d.min || value > d.max) problems.push(`${d.name} (from ${sourceOf(d.name)}) must be a duration from ${d.min} ms to ${d.max / 1000} s, such as 30s, PT1M or 500ms`);
    return value;
  };
  const retryBaseMs = within(s.webhookRetryBaseMs, LIMITS.retryBase);
  const timeoutMs = within(s.webhookTimeoutMs, LIMITS.timeout);
  const web = parseWebhookSettings({ endpoints: s.webhookEndpoints, secrets: s.webhookSecrets, allowInternal: s.webhookAllowInternal, sourceOf });
  problems.push(...web.problems);
  return {
    config: { enabled: s.webhook, endpoints: web.endpoints, retries: s.webhookAttempts, allowInternal: s.webhookAllowInternal, retryBaseMs, timeoutMs, historyMs: s.webhookHistoryMs },
    problems,
  };
}

/**
 * What `PUT /api/settings/<name>` refuses a value of a setting read together with others for
 * (the webhook settings): the problems the notifier would find in them with the new value laid
 * over the ones in force (`current`); empty for any other setting.
 */
export function runtimeChangeProblems(field: keyof typeof SETTINGS, value: unknown, current: WebhookSettingFields): string[] {
  if (!(WEBHOOK_SETTINGS as readonly string[]).includes(field)) return [];
  const changed = SETTINGS[field].name;
  const candidate = { ...current, [field]: value } as WebhookSettingFields;
  const sourceOf = (name: string) => {
    if (name === changed) return "the value sent";
    const at = current.sources[name];
    return at === undefined || at === "default" ? "the value in force" : at;
  };
  return readWebhookSettings(candidate, sourceOf).problems;
}
