import { readFileSync } from "node:fs";
import { parseKey, isTenant } from "@svc/keys";
import { isPersonId, isRepositoryName, parseAnonymousRights, PERSON_ID_RULE, type GrantSpec } from "@svc/grants";
import { isFormatName, maskUrlsIn, type RepositoryFormat } from "@svc/contracts";
import { parseAddressList } from "./addresses.js";
import { parseSettingDuration, parseIsoDuration, durationMs } from "./duration.js";
import { closestName } from "./closest-name.js";
import { serviceUrlProblem } from "./upstream-address.js";
import { describeInForce, type SettingInForce, type SettingOrigin } from "./settings-in-force.js";

// Over ~400 lines on purpose: the catalog below is one table, read top to bottom by the settings
// reference and by operators; splitting it would hide settings from both.

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

/** The service processes, as the settings reference names them. */
export const SERVICE_NAMES = ["gateway", "auth", "artifacts", "admin", "walker", "notifier", "console"] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

/**
 * What the settings reference (docs/configuration/settings.md, rendered by settings-reference.ts)
 * says about a setting. `readBy` is stated here because the services' config.ts `Pick<>` lists
 * are types, not data; settings-reference.test.ts holds the two together. `every` marks what the
 * loader itself acts on in every process.
 */
export interface SettingDoc {
  description: string;
  /** The default as an operator writes it, where the parsed value reads badly (milliseconds, blank). */
  defaultText?: string;
  readBy: readonly ServiceName[] | "every";
  /**
   * How the value is shown outside the loader (`GET /api/settings`, the console) when part of
   * it is a secret: the webhook endpoints' URLs carry their receivers' tokens.
   */
  shown?: (text: string) => string;
  /**
   * Differs between nodes by nature (where a process listens, how it logs, the file it was
   * started with, where it finds its neighbours): never counted as nodes disagreeing.
   */
  perProcess?: true;
}

export interface SettingDef<T> extends SettingDoc {
  name: string;
  parse: Parser<T>;
  default: T;
  secret?: boolean;
}

const def = <T>(name: string, parse: Parser<T>, dflt: T, doc: SettingDoc, secret = false): SettingDef<T> => ({ name, parse, default: dflt, secret, ...doc });
const ALL: readonly ServiceName[] = SERVICE_NAMES;
const DB_USERS: readonly ServiceName[] = ["auth", "artifacts", "admin", "walker", "notifier", "console"];

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
/** A duration from `min` to `max` milliseconds, described with their texts. */
const durationWithin = (min: number, max: number, range: string): Parser<number> => (raw) => {
  const ms = parseSettingDuration(raw);
  return ms === undefined || ms < min || ms > max ? { ok: false, reason: `must be a duration from ${range}` } : { ok: true, value: ms };
};
/** The lifetime of a signed object-store URL: at least a second, at most the 7 days SigV4 allows. */
const signedUrlTtl = durationWithin(1000, 7 * 86_400_000, "1s to 7 days, such as 60s");
/**
 * A minimum age (the cooldown's), kept as written (`72h`, `3d`, `P3D`) so it reads back the same
 * in `GET /api/settings` and in the stored text; blank, `0` and `off` are none (""). minAgeMs reads it.
 */
export const minAge: Parser<string> = (raw) => {
  const t = raw.trim();
  if (minAgeMs(t) === undefined) return { ok: false, reason: "must be a duration such as 72h, 3d, 30m or P3D (blank, 0 or off: none)" };
  return { ok: true, value: minAgeMs(t) === 0 ? "" : t };
};
/** The milliseconds of a minimum age as svc.gate.min-age takes it: 0 for none (blank, `0`, `off`); undefined when it is not one. */
export function minAgeMs(text: string): number | undefined {
  const t = text.trim();
  if (t === "" || t.toLowerCase() === "off") return 0;
  return parseSettingDuration(t);
}
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
/** Where a service reaches another: an http(s) URL or `unix:/path.sock` (upstream-address.ts). */
const serviceUrl: Parser<string> = (raw) => {
  const t = raw.trim();
  const problem = t === "" ? undefined : serviceUrlProblem(t, ["http", "https"]);
  return problem === undefined ? { ok: true, value: t } : { ok: false, reason: problem };
};
/** A Unix domain socket path to listen on: absolute, blank for none. */
const socketPath: Parser<string> = (raw) => {
  const t = raw.trim();
  // sun_path holds 108 bytes on Linux (104 on macOS), its terminating NUL included.
  if (t !== "" && (!t.startsWith("/") || Buffer.byteLength(t) > 103)) return { ok: false, reason: "must be an absolute path of at most 103 bytes, such as /run/svc/artifacts.sock (blank: none)" };
  return { ok: true, value: t };
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
const repositoryFormat: Parser<RepositoryFormat> = (raw) => {
  // Whether the artifacts service has the format is checked there, against its format table, at start.
  const v = raw.trim().toLowerCase();
  return isFormatName(v) ? { ok: true, value: v } : { ok: false, reason: "must be a format name (lowercase letters, digits and hyphens)" };
};
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
/** A size in bytes: a whole number, or one with a binary suffix (`512m`, `10g`, `10GiB`: k, m, g, t are powers of 1024). */
export const byteSize: Parser<number> = (raw) => {
  const m = /^(\d{1,15})\s*(?:([kmgt])(?:i?b)?|b)?$/i.exec(raw.trim());
  const scale = { k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40 } as const;
  const n = m ? Number(m[1]) * (m[2] ? scale[m[2].toLowerCase() as keyof typeof scale] : 1) : NaN;
  return Number.isSafeInteger(n) && n > 0 ? { ok: true, value: n } : { ok: false, reason: "must be a size in bytes above 0, such as 1073741824, 512m or 10g" };
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
/** The screening gate's actions (docs/administration/screening.md). */
const gateAction = oneOf(["BLOCK", "HOLD", "WARN", "ALLOW"] as const);
/** svc.advisories.sources: absolute folders or files, and https URLs, comma-separated. */
const advisorySources: Parser<string[]> = (raw) => {
  const parts = raw.split(",").map((p) => p.trim()).filter((p) => p !== "");
  for (const p of parts) {
    if (p.startsWith("/")) continue;
    if (!/^https:\/\//i.test(p)) return { ok: false, reason: `entry "${p}" must be an absolute path (a folder or a zip) or an https:// URL` };
    try {
      new URL(p);
    } catch {
      return { ok: false, reason: `entry "${p}" is not a URL` };
    }
  }
  return { ok: true, value: parts };
};
const storageKind: Parser<"filesystem" | "s3"> = (raw) => {
  const v = raw.trim().toLowerCase();
  return v === "filesystem" || v === "s3" ? { ok: true, value: v } : { ok: false, reason: "must be filesystem or s3" };
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
  tenant: def("svc.tenant", tenant, "default", { readBy: ALL,
    description: "The tenant served. A key of another tenant is refused (401); events go to the JetStream stream `SVC_<TENANT>` on subjects `svc.<tenant>.…`." }),
  repository: def("svc.repository", repository, "default", { readBy: ["artifacts"],
    description: "The repository created under the store at first start." }),
  repositoryFormat: def("svc.repository-format", repositoryFormat, "raw" as RepositoryFormat, { readBy: ["artifacts"],
    description: "The format `svc.repository` is created with at first start: one of the artifacts service's formats (docs/administration/repositories.md lists them); a name it does not serve refuses its start. An existing repository keeps its format." }),
  repositoryScopeFromPath: def("svc.repository-scope-from-path", bool, false, { readBy: ["gateway", "artifacts", "admin"],
    description: "`true`: an artifact request without `Service-Repository-Name` is authorised against the repository its path names (`/repository/<repository>/…`), never another, instead of against `*`; on every repository at once. Prefer each repository's own `scopeFromPath` (`PATCH /api/repositories/<name> {\"scopeFromPath\": true}`), switched on only where clients cannot send the header (npm, pnpm, yarn, pip, twine). Raises the advisory `svc.repository-scope.from-path` while on." }),
  auth: def("svc.auth", bool, true, { readBy: ["gateway", "artifacts", "admin"],
    description: "`false` serves every request anonymously, writes included: warned at boot and raised as the critical advisory `svc.auth.open`." }),
  bootstrapKey: def("svc.bootstrap-key", key, "", { readBy: ["auth"],
    description: "A well-formed key provisioned on every boot with `*` over every repository, never expiring. A malformed key, or one of another tenant than `svc.tenant`, refuses start-up; a `SECURITY` line is logged on every boot while it is set." }, true),
  anonymousRights: def("svc.anonymous-rights", anonymousRights, [] as GrantSpec[], { readBy: ["gateway", "artifacts", "admin"],
    description: "The keyless caller's rights, comma-separated: `repository:read`, `<repository>=repository:read`, `<surface>:*` or `*`. A key holds its own grants plus these." }),
  readOnly: def("svc.read-only", bool, false, { readBy: ["gateway", "artifacts", "walker", "admin"],
    description: "`true` answers every artifact write with 403, at the gateway and again at the store; walks look and count but change nothing. The administration API stays writable." }),
  cacheTtlMs: def("svc.cache.ttl", duration, 300_000, { readBy: ["gateway"], defaultText: "5m",
    description: "How long a gateway caches a key's rights; `0` switches the cache off. Credential-change events evict entries at once; this bounds the delay when events are lost." }),
  shutdownGraceMs: def("svc.shutdown-grace", duration, 25_000, { readBy: ALL, defaultText: "25s",
    description: "On SIGTERM a service stops taking requests and finishes those under way for at most this long, then cuts them and exits 1. Give the container runtime a longer grace period." }),
  credentialDefaultLifetime: def("svc.credential-default-lifetime", isoDuration, undefined, { readBy: ["auth"], defaultText: "P90D",
    description: "Lifetime (ISO-8601 duration) of a key minted without `expires`." }),
  credentialMaxLifetime: def("svc.credential-max-lifetime", isoDuration, undefined, { readBy: ["auth"], defaultText: "blank (no cap)",
    description: "Cap on every key's lifetime: a longer request, `nonExpiring` and a cleared expiry are pulled back to it, and the answer says the expiry given." }),
  trackKeyUsage: def("svc.track-key-usage", bool, false, { readBy: ["gateway", "auth"],
    description: "`true`: each gateway counts key uses and sends them to the auth service in one batch every 5 s; listings show `lastUsed`, `lastUsedFrom` and `useCount`." }),
  trustedProxies: def("svc.trusted-proxies", addressList, [] as string[], { readBy: ["gateway"],
    description: "Addresses and CIDRs, comma-separated, of proxies whose `X-Forwarded-For`, `X-Forwarded-Host` and `X-Forwarded-Proto` the gateway believes: the client address is then the nearest hop that is not a trusted proxy (key allowlists, usage tracking), and the host and scheme a trusted proxy names are the ones npm tarball URLs and the console's sign-in addresses and origin check use. From anyone else those headers are ignored." }),
  uiAdmins: def("svc.ui.admins", admins, [] as string[], { readBy: ["auth"],
    description: "Person ids (`oauth/<id>`, `oidc/<sub>`), comma-separated, granted `*` over `*` on every start; a `*` entry refuses start-up. Removing an id leaves its grant until revoked through the API." }),
  internalSecret: def("svc.internal-secret", secret, "", { readBy: ALL, defaultText: "required",
    description: "At least 32 characters, the same on every service: the gateway signs each request's identity with it and upstreams refuse requests without a valid signature; it also keys the deployment's NATS control subjects." }, true),
  internalSecretPrevious: def("svc.internal-secret-previous", secret, "", { readBy: ALL,
    description: "A second internal secret upstreams also accept (and whose control subjects every node also answers on) while the secret is rotated: nothing is refused while nodes with the old and the new one run side by side (docs/operations/internal-secret-rotation.md). Blank: only `svc.internal-secret`." }, true),
  databaseUrl: def("svc.database-url", url(["postgres", "postgresql"]), "", { readBy: DB_USERS, defaultText: "required",
    description: "PostgreSQL URL (`postgres://` or `postgresql://`; node-postgres options such as `sslmode` in the query). Each service creates and migrates its own schema at start." }, true),
  redisUrl: def("svc.redis-url", url(["redis", "rediss"]), "", { readBy: ["gateway"],
    description: "Redis URL (`redis://` or `rediss://`) holding the rate buckets. Blank: the gateway serves without a rate limit and warns at start; unreachable: it serves without the limit (fail open)." }, true),
  natsUrl: def("svc.nats-url", urlList(["nats", "tls"]), "", { readBy: ALL, defaultText: "required",
    description: "NATS URL with JetStream (`nats://` or `tls://`; `nats://user:password@host:4222` for a server that asks for them), or a cluster's seed URLs separated by commas." }, true),
  databasePoolSize: def("svc.database-pool-size", poolSize, 0, { perProcess: true, readBy: DB_USERS,
    description: "Most Postgres connections one service process opens (1-200); `0` keeps each service's own: 10 for auth and artifacts, 6 for the notifier, 4 for admin and walker. An artifacts process fetching for proxy repositories opens, besides, up to 16 for its fetches' locks and 8 for its metadata documents' (each at most this number when it is set)." }),
  host: def("svc.host", str, "0.0.0.0", { perProcess: true, readBy: ALL,
    description: "The address a service listens on (`npm start` sets 127.0.0.1)." }),
  port: def("svc.port", port, 8080, { perProcess: true, readBy: ALL,
    description: "The port a service listens on (`npm start`: the gateway on 8080, the others on free ports it hands to the gateway)." }),
  socket: def("svc.socket", socketPath, "", { perProcess: true, readBy: ["auth", "artifacts", "admin", "walker", "notifier", "console"], defaultText: "blank (none)",
    description: "A Unix domain socket path this service listens on beside `svc.host`:`svc.port`, for a gateway on the same host (one pod, one machine) that names it as `unix:<path>` in its `svc.<service>.url`: large downloads then cost both processes about half the CPU of loopback TCP. The file is made with mode 0660 (give the two processes one group, or a shared folder only they can enter); a file left by a crash is removed at start (one another process still listens on refuses the start) and the file is removed at shutdown. `npm start` uses it for every service." }),
  authUrl: def("svc.auth.url", serviceUrl, "http://127.0.0.1:18081", { perProcess: true, readBy: ["gateway"],
    description: "Where the gateway reaches the auth service." }),
  artifactsUrl: def("svc.artifacts.url", serviceUrl, "http://127.0.0.1:18082", { perProcess: true, readBy: ["gateway", "walker", "auth"],
    description: "Where the gateway reaches the artifacts service, the walker its internal routes, and the auth service its repository list (a grant naming a repository that does not exist is answered with a warning)." }),
  artifactsNodeUrl: def("svc.artifacts.node-url", url(["http", "https"]), "", { perProcess: true, readBy: ["artifacts"], defaultText: "blank (`http://<svc.host>:<svc.port>`)",
    description: "This artifacts node's own address as the other artifacts nodes reach it: a request on another node for a file this node is fetching for a proxy repository is streamed the bytes from here as they arrive (`/internal/` routes, signed with the internal secret). Blank: `http://<svc.host>:<svc.port>`, with this machine's first non-loopback IPv4 address for a wildcard `svc.host` (a Kubernetes pod's own address). Set it when that is not how the other nodes reach this one." }),
  adminUrl: def("svc.admin.url", serviceUrl, "http://127.0.0.1:18083", { perProcess: true, readBy: ["gateway", "artifacts", "notifier", "console"],
    description: "Where the gateway reaches the admin service (the rest of `/api/`, `/metrics`, per-tenant rate limits), and where the other services read the settings changed at run time (`PUT /api/settings/<name>`)." }),
  notifierUrl: def("svc.notifier.url", serviceUrl, "http://127.0.0.1:18084", { perProcess: true, readBy: ["gateway"],
    description: "Where the gateway reaches the notifier (`/api/webhooks`)." }),
  consoleUrl: def("svc.console.url", serviceUrl, "http://127.0.0.1:18086", { perProcess: true, readBy: ["gateway"],
    description: "Where the gateway reaches the console (`/login`, `/logout`, `/ui/`, and `/` for a browser) and asks what a session cookie stands for." }),
  uiDeploy: def("svc.ui.deploy", bool, false, { readBy: ["gateway", "console"],
    description: "`true` switches on the console's Deploy action (publishing one file from the browser): the console offers it, and the gateway lets a signed-in person publish to `/repository/` with the console session, under the same rights as a key; off, such writes are refused with 403 (keys are unaffected). Changes at run time (`PUT /api/settings/ui.deploy`, the console's Settings page, Modules) unless fixed at start." }),
  walkerUrl: def("svc.walker.url", serviceUrl, "http://127.0.0.1:18085", { perProcess: true, readBy: ["gateway"],
    description: "Where the gateway reaches the walker (`/api/walks`)." }),
  storage: def("svc.storage", storageKind, "filesystem", { readBy: ["artifacts", "walker"],
    description: "Where the blob store keeps content: `filesystem` (a folder, `svc.filesystem-root`) or `s3` (an S3-compatible bucket, `svc.storage.s3.*`: AWS S3, Ceph RGW, MinIO, ...). Every artifacts replica and the walker must use the same store." }),
  filesystemRoot: def("svc.filesystem-root", str, "", { readBy: ["artifacts", "walker"], defaultText: "required with svc.storage=filesystem (artifacts, walker)",
    description: "The blob store's folder (`blobs/` and `tmp/` under it; a `repositories/` folder left by a version before the blob store is migrated into it on start). Every artifacts replica and the walker must see the same folder." }),
  s3Bucket: def("svc.storage.s3.bucket", str, "", { readBy: ["artifacts", "walker"], defaultText: "required with svc.storage=s3",
    description: "The bucket of the S3 blob store (`<prefix>blobs/sha256/<ab>/<digest>`, `<prefix>staging/<uuid>`). It must exist: the services refuse to start, naming this setting, when it does not." }),
  s3Endpoint: def("svc.storage.s3.endpoint", url(["http", "https"]), "", { readBy: ["artifacts", "walker"], defaultText: "blank (AWS S3)",
    description: "The S3 API's base URL of a self-hosted store (e.g. `https://rgw.example.com`); blank for AWS S3 in `svc.storage.s3.region`." }),
  s3Region: def("svc.storage.s3.region", str, "us-east-1", { readBy: ["artifacts", "walker"],
    description: "The bucket's region (signatures name it; most self-hosted stores accept any)." }),
  s3PathStyle: def("svc.storage.s3.path-style", bool, false, { readBy: ["artifacts", "walker"],
    description: "`true`: path-style requests (`<endpoint>/<bucket>/<key>`), what most self-hosted stores need; `false`: virtual-hosted style (`<bucket>.<endpoint>`)." }),
  s3Prefix: def("svc.storage.s3.prefix", str, "", { readBy: ["artifacts", "walker"],
    description: "A prefix of every key (e.g. `svc/`), for a bucket shared with other data." }),
  s3AccessKey: def("svc.storage.s3.access-key", str, "", { readBy: ["artifacts", "walker"], defaultText: "blank (the AWS credential chain)",
    description: "The access key id; with `svc.storage.s3.secret-key`. Both blank: the standard AWS chain (environment, web identity of a Kubernetes service account, profile, instance role)." }, true),
  s3SecretKey: def("svc.storage.s3.secret-key", str, "", { readBy: ["artifacts", "walker"], defaultText: "blank (the AWS credential chain)",
    description: "The secret access key that goes with `svc.storage.s3.access-key`." }, true),
  s3EqualParts: def("svc.storage.s3.equal-parts", bool, false, { readBy: ["artifacts", "walker"],
    description: "`true`: multipart uploads in equal 64 MiB parts (stores that require equal parts; objects up to 625 GiB). `false`: parts from 8 MiB, doubling every 1,000 parts, so any object fits S3's 10,000-part cap." }),
  s3IdleTimeoutMs: def("svc.storage.s3.idle-timeout", duration, 20_000, { readBy: ["artifacts", "walker"], defaultText: "20s",
    description: "How long a request to the object store may stay silent (nothing sent or received) before the store counts as hung: the request is tried once more, then answered 503 with Retry-After. Two tries must fit in the gateway's 60 s wait for an answer, so keep it at 25 s or less. A slow but flowing transfer is never cut. `0` waits for ever." }),
  s3Redirect: def("svc.storage.s3.redirect", bool, false, { readBy: ["artifacts"],
    description: "`true`: a GET of an artifact (and of an OCI blob at `/v2/`; never a manifest) is answered with a 307 redirect to a short-lived pre-signed URL of its object in the bucket, after every check a download has (access, preconditions, the download recorded), so the object store sends the bytes instead of the artifacts service; HEAD, 304, errors and requests with `If-Match`, `If-Unmodified-Since` or `If-Range` are still answered by the server. Clients must reach `svc.storage.s3.endpoint` (docs/install/s3-redirect.md). Needs `svc.storage=s3`: a node on the filesystem refuses to start with it." }),
  s3RedirectTtlMs: def("svc.storage.s3.redirect.ttl", signedUrlTtl, 60_000, { readBy: ["artifacts"], defaultText: "60s",
    description: "How long a redirect's pre-signed URL stays valid (1s to 7 days): a client must start its download within it (one under way is not cut when it expires)." }),
  metricsSampleIntervalMs: def("svc.metrics.sample-interval", durationWithin(1000, 3_600_000, "1s to 1h, such as 1m"), 60_000, { readBy: ["admin"], defaultText: "1m",
    description: "How often the admin service samples the deployment's meters (requests, errors, latency, storage) into Postgres for the console's charts: once per interval across every admin node." }),
  metricsHistoryMs: def("svc.metrics.history", durationWithin(3_600_000, 90 * 86_400_000, "1h to 90 days, such as P1D"), 86_400_000, { readBy: ["admin"], defaultText: "P1D",
    description: "How long the sampled meters (and the recent publishes the console's home page lists) are kept; older samples are removed as new ones are taken." }),
  logLevel: def("svc.log-level", logLevel, "info", { perProcess: true, readBy: ALL,
    description: "pino level: `fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`." }),
  uiSessionLifetimeMs: def("svc.ui.session.lifetime", duration, 12 * 3_600_000, { readBy: ["console"], defaultText: "PT12H",
    description: "How long a console session lasts after sign-in, however busy; then the person signs in again." }),
  uiSessionIdleTimeoutMs: def("svc.ui.session.idle-timeout", duration, 30 * 60_000, { readBy: ["console"], defaultText: "PT30M",
    description: "A console session unused for this long ends." }),
  uiSecureCookie: def("svc.ui.secure-cookie", bool, true, { readBy: ["console"],
    description: "The console's cookies carry `Secure` (sent over HTTPS only). `false` (`SVC_UI_SECURE_COOKIE=false`) allows plain http, for local runs." }),
  uiPublicUrl: def("svc.ui.public-url", url(["http", "https"]), "", { readBy: ["console", "artifacts"], defaultText: "blank (the gateway's address as the browser used it)",
    description: "The public base URL of the deployment (e.g. `https://repo.example.com`): the sign-in callbacks `<url>/login/oauth2/code/oidc` and `/oauth` are built from it, console form posts must come from its origin, and npm's `dist.tarball` URLs start with it. Set it behind a TLS-terminating proxy." }),
  uiGatewayUrl: def("svc.ui.gateway-url", url(["http", "https"]), "http://127.0.0.1:8080", { perProcess: true, readBy: ["console"],
    description: "Where the console calls the public API as the signed-in person (the gateway decides every right)." }),
  uiOidcIssuerUri: def("svc.ui.oidc.issuer-uri", url(["http", "https"]), "", { readBy: ["console"], defaultText: "blank (disabled)",
    description: "The OpenID Connect issuer the console signs people in with (endpoints discovered); people become `oidc/<sub>`. `https://` (the operator's CA through `NODE_EXTRA_CA_CERTS`), or `http://` on a loopback address only, which raises the warning `svc.ui.oidc.plain-http`." }),
  uiOidcClientId: def("svc.ui.oidc.client-id", str, "", { readBy: ["console"],
    description: "The console's client id at the OpenID Connect issuer." }),
  uiOidcClientSecret: def("svc.ui.oidc.client-secret", str, "", { readBy: ["console"],
    description: "The console's client secret at the OpenID Connect issuer." }, true),
  uiOidcName: def("svc.ui.oidc.name", str, "Single sign-on", { readBy: ["console"],
    description: "The label of the OpenID Connect sign-in button." }),
  uiOauthClientId: def("svc.ui.oauth.client-id", str, "", { readBy: ["console"], defaultText: "blank (disabled)",
    description: "The console's OAuth provider app client id (GitHub's endpoints unless the three URLs below say otherwise); people become `oauth/<id>`." }),
  uiOauthClientSecret: def("svc.ui.oauth.client-secret", str, "", { readBy: ["console"],
    description: "The OAuth provider app's client secret." }, true),
  uiOauthAuthorizeUrl: def("svc.ui.oauth.authorize-url", url(["http", "https"]), "https://github.com/login/oauth/authorize", { readBy: ["console"],
    description: "The OAuth provider's authorization endpoint." }),
  uiOauthTokenUrl: def("svc.ui.oauth.token-url", url(["http", "https"]), "https://github.com/login/oauth/access_token", { readBy: ["console"],
    description: "The OAuth provider's token endpoint." }),
  uiOauthScope: def("svc.ui.oauth.scope", str, "read:user", { readBy: ["console"],
    description: "The scope the console asks the OAuth provider app for (space-separated); it needs only to read the signed-in user." }),
  uiOauthUserUrl: def("svc.ui.oauth.user-url", url(["http", "https"]), "https://api.github.com/user", { readBy: ["console"],
    description: "The OAuth provider's endpoint answering the signed-in user as JSON; its `id` (else `sub`) names the person." }),
  profile: def("svc.profile", profile, "", { readBy: "every",
    description: "`dev` raises the critical advisory `svc.profile.dev`; refused at start unless `svc.host` is a loopback address." }),
  rateLimit: def("svc.rate-limit", count, 6000, { readBy: ["gateway", "admin"],
    description: "Requests per minute per tenant, shared by every gateway through Redis (one bucket per tenant, one for keyless callers); `0` removes the limit and raises `svc.ratelimit.unset`. Per-tenant overrides: `/api/rate-limits`. Changes at run time (`PUT /api/settings/rate-limit`) unless fixed at start." }),
  malwareAction: def("svc.malware-action", gateAction, "BLOCK", { readBy: ["admin", "artifacts"],
    description: "What the screening gate does with a package version an OSV `MAL-` record names (docs/administration/screening.md): `BLOCK` refuses it, `HOLD` stores it unserved until released, `WARN` stores and serves it with a finding, `ALLOW` does nothing. `ALLOW` raises `svc.malware.allow` (critical). Changes at run time unless fixed at start." }),
  vulnerabilityAction: def("svc.vulnerability-action", gateAction, "BLOCK", { readBy: ["admin", "artifacts"],
    description: "What the screening gate does with a package version a vulnerability at or above `svc.vulnerability-threshold` affects: `BLOCK`, `HOLD`, `WARN` or `ALLOW` (as `svc.malware-action`). `ALLOW` raises `svc.vulnerability.allow`. Changes at run time unless fixed at start." }),
  vulnerabilityThreshold: def("svc.vulnerability-threshold", oneOf(["CRITICAL", "HIGH", "MEDIUM", "LOW", "NONE"] as const), "HIGH", { readBy: ["admin", "artifacts"],
    description: "`CRITICAL`, `HIGH`, `MEDIUM` or `LOW`: the lowest CVSS level of a vulnerability the gate acts on; `NONE` switches the vulnerability check off and raises `svc.vulnerability.threshold-none`. Changes at run time unless fixed at start." }),
  denyListAction: def("svc.deny-list-action", gateAction, "BLOCK", { readBy: ["admin", "artifacts"],
    description: "What the screening gate does with a package version the deny list (`/api/deny-list`) names: `BLOCK`, `HOLD`, `WARN` or `ALLOW` (as `svc.malware-action`). `ALLOW` raises `svc.deny-list.allow`. Changes at run time unless fixed at start." }),
  gateMinAge: def("svc.gate.min-age", minAge, "", { readBy: ["admin", "artifacts"], defaultText: "blank (off)",
    description: "The cooldown (docs/administration/screening.md): a proxied package version published upstream less than this long ago (`72h`, `3d`, `30m`, `P3D`) is neither listed in the metadata a proxy repository serves nor fetched; one whose publish time is not known counts as too young. Blank, `0` or `off`: no cooldown. A repository may override it (`PUT /api/repositories/<name>/gate`) and a package be let through (`/api/gate/allows`). Changes at run time (`PUT /api/settings/gate.min-age`, per tenant with `?tenant=`) unless fixed at start." }),
  advisoriesSources: def("svc.advisories.sources", advisorySources, [] as string[], { readBy: ["artifacts"], defaultText: "blank (no advisory data)",
    description: "Where the screening gate's advisory data comes from, comma-separated: folders of OSV `.json` records or of OSV zips, paths of zips, and `https://` URLs of an OSV zip (osv.dev's per-ecosystem `all.zip`) or record. Loaded into Postgres at start and every `svc.advisories.refresh`; a source that cannot be read keeps its last good data and is reported (`GET /api/advisories/status`)." }),
  advisoriesRefreshMs: def("svc.advisories.refresh", duration, 3_600_000, { readBy: ["artifacts"], defaultText: "1h",
    description: "How often advisory data is loaded again from `svc.advisories.sources` (by one artifacts node at a time); versions already stored are checked again against what is new." }),
  blockPrivateImportHosts: def("svc.block-private-import-hosts", bool, true, { readBy: ["admin", "artifacts"],
    description: "`true`: a proxy repository's upstream (and an import's source) must be `https://` on a public address, checked when the repository is created and again on the address each fetch connects to (the rule webhooks follow: loopback, private, link-local, cloud metadata and other non-public ranges refused). `false` lets them reach internal or plain-http hosts and raises `svc.import.private-hosts`. Changes at run time unless fixed at start." }),
  proxyMetadataTtlMs: def("svc.proxy.metadata-ttl", duration, 300_000, { readBy: ["artifacts"], defaultText: "5m",
    description: "How long a proxy repository serves package metadata (npm packuments) fetched from its upstream before asking again (with If-None-Match); a definite miss (404) is kept 30 s. Files fetched are kept for good." }),
  proxyMetadataStaleMs: def("svc.proxy.metadata-stale-while-revalidate", duration, 3_600_000, { readBy: ["artifacts"], defaultText: "1h",
    description: "How long after `svc.proxy.metadata-ttl` has run out a proxy repository still answers with its cached metadata at once (with `Warning: 110` and `Age`), asking its upstream in the background so the next request gets the new copy (RFC 5861's stale-while-revalidate). Older than this, the upstream is asked before answering. `0` turns it off: every request after the time to live waits for the upstream. The cached copy is served whatever its age while the upstream fails." }),
  webhook: def("svc.webhook", bool, false, { readBy: ["notifier"],
    description: "`true` delivers webhooks. Off, the notifier still reads and acknowledges events but records nothing: events published meanwhile are never sent. Changes at run time (`PUT /api/settings/webhook`, the console's Settings page) unless fixed at start." }),
  /** One endpoint a line; the notifier validates the line syntax at start. */
  webhookEndpoints: def("svc.webhook-endpoints", str, "", { readBy: ["notifier"],
    description: "One endpoint per line (newlines or `;`; blank lines and `#` comments skipped): `<URL> <events>`, events `none` (every event) or kinds such as `published, removed`. A URL's path and query may hold the receiver's token (Slack, Teams, Discord), so everywhere else (the settings table, the webhooks API and page, logs, meters) it is shown as its scheme and host only: `https://hooks.slack.com/…`. Changes at run time (`PUT /api/settings/webhook-endpoints`, the console's Settings page) unless fixed at start.",
    shown: maskUrlsIn }),
  /** Per endpoint; the notifier validates it at start. */
  webhookSecrets: def("svc.webhook-secrets", str, "", { readBy: ["notifier"],
    description: "One line per signed endpoint: `<URL> <secret>`; `whsec_<base64>` or text, at least 16 bytes. An endpoint without a secret gets unsigned deliveries. Changes at run time (`PUT /api/settings/webhook-secrets`, the console's Settings page) unless fixed at start. Never shown (only whether it is set), nor kept in the change list." }, true),
  webhookAttempts: def("svc.webhook-attempts", count, 5, { readBy: ["notifier"],
    description: "Retries after the first try before a delivery is set aside; `0`: one try. Changes at run time (`PUT /api/settings/webhook-attempts`, the console's Settings page) unless fixed at start." }),
  webhookAllowInternal: def("svc.webhook-allow-internal", bool, false, { readBy: ["notifier"],
    description: "Also allow `http://` endpoints and endpoints on loopback, private, link-local and other non-public addresses. Changes at run time (`PUT /api/settings/webhook-allow-internal`, the console's Settings page) unless fixed at start." }),
  webhookRetryBaseMs: def("svc.webhook-retry-base", duration, 30_000, { readBy: ["notifier"], defaultText: "30s",
    description: "Pause before the first retry (10 ms to 1 h); retry n waits between half and all of base × 2^(n-1), at most an hour. Changes at run time (`PUT /api/settings/webhook-retry-base`, the console's Settings page) unless fixed at start." }),
  webhookTimeoutMs: def("svc.webhook-timeout", duration, 10_000, { readBy: ["notifier"], defaultText: "10s",
    description: "The longest one delivery attempt may take, connecting included (100 ms to 300 s). Changes at run time (`PUT /api/settings/webhook-timeout`, the console's Settings page) unless fixed at start." }),
  webhookHistoryMs: def("svc.webhook-history", duration, 30 * 24 * 3_600_000, { readBy: ["notifier"], defaultText: "30d",
    description: "How long a finished delivery (delivered or set aside) is kept after its last change; `0` keeps everything. Changes at run time (`PUT /api/settings/webhook-history`, the console's Settings page) unless fixed at start." }),
  auditRetentionMs: def("svc.audit-retention", duration, 365 * 24 * 3_600_000, { readBy: ["admin"], defaultText: "365d",
    description: "How long an entry of the audit trail (every change made through the API: who, what, when, from which address; `GET /api/audit`, the console's Audit page) is kept; older entries are purged every hour. `0` keeps everything. Changes at run time (`PUT /api/settings/audit-retention`, the console's Settings page) unless fixed at start." }),
  uploadIdleTimeoutMs: def("svc.upload-idle-timeout", duration, 30_000, { readBy: ["gateway", "artifacts"], defaultText: "30s",
    description: "A request body (an upload, an API write) that sends nothing for this long is cut: the gateway answers 408 and drops it, and the stored artifact keeps its old content. The artifacts service applies it too, a little later (up to 5 s), as a backstop. `0` waits for ever." }),
  storageReclaimGraceMs: def("svc.storage.reclaim-grace", duration, 3_600_000, { readBy: ["walker"], defaultText: "1h",
    description: "How long a blob no index row references is left before a walk's reclaim removes it (counted from its last write or re-use), so a publish in progress, whose blob is committed a moment before its index row, never loses its content. Give it more than the longest publish takes." }),
  buildCacheMaxBytes: def("svc.build-cache.max-bytes", byteSize, 10 * 2 ** 30, { readBy: ["artifacts"], defaultText: "10g",
    description: "The size cap of a build cache (`/cache/<name>/`, docs/integration/build-caches.md) created without one, and of a cache first used without being created (`512m`, `10g`, or bytes): past it, the least recently used entries are evicted. A cache's own `maxBytes` (`POST /api/build-caches`, `PATCH /api/build-caches/<name>`) wins." }),
  buildCacheMaxEntryBytes: def("svc.build-cache.max-entry-bytes", byteSize, 100 * 2 ** 20, { readBy: ["artifacts"], defaultText: "100m",
    description: "The largest single build cache entry a cache without its own `maxEntryBytes` takes; a larger upload is answered 413 and nothing is stored (Gradle and Bazel carry on building). An entry is never larger than its cache's cap either." }),
  indexCacheTtlMs: def("svc.index-cache.ttl", duration, 10_000, { readBy: ["artifacts"], defaultText: "10s",
    description: "How long an artifacts node answers what a downloaded path holds from its memory instead of asking Postgres; `0` switches the cache off. A change made on the node evicts the entry as it commits, and one made on another node when its artifact event arrives; this bounds the delay when an event is lost. Bypassed while NATS is away, and never holds a path that has no artifact." }),
  uploadConcurrency: def("svc.upload-concurrency", count, 16, { readBy: ["gateway"],
    description: "Most artifact uploads (`/repository/` bodies) one caller (a key; keyless callers by client address) may be sending through one gateway at once; the next is refused with 429 and `Retry-After`. Administration bodies are not counted. `0` removes the cap." }),
  artifactsSeparateOrigin: def("svc.artifacts.separate-origin", bool, false, { readBy: ["gateway"],
    description: "`true` when browsers reach `/repository/` on a host name of its own, not the console's (docs/install/reverse-proxy.md): an artifact a browser would render or run (HTML, SVG, XML, JavaScript, PDF) is then no longer sent as `Content-Disposition: attachment`. Every artifact answer keeps `Content-Security-Policy: sandbox; default-src 'none'` and `X-Content-Type-Options: nosniff` either way." }),
  configFile: def("svc.config-file", str, "", { perProcess: true, readBy: "every",
    description: "A Java-style properties file read after `-D` arguments and the environment; an unknown `svc.` name in it refuses start-up." }),
} as const;

type Defs = typeof SETTINGS;
export type Settings = { [K in keyof Defs]: Defs[K]["default"] extends infer D ? (D extends undefined ? string | undefined : D) : never } & {
  /** Where each setting came from, for messages (never the value). */
  sources: Record<string, string>;
  /** What this process runs with, for `GET /api/settings`: each setting's origin, a secret's only as set or not (settings-in-force.ts). */
  inForce: SettingInForce[];
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
  // Every -D argument is ours (a misspelt prefix too); a properties file may hold other keys.
  for (const [k, where] of [...[...props.keys()].map((k) => [k, "-D argument"] as const), ...[...file.keys()].filter((k) => k.startsWith("svc.")).map((k) => [k, `properties file ${configFile}`] as const)]) {
    if (!known.has(k)) problems.push(`${k} (${where}): unknown setting${didYouMean(closestName(k, known))}`);
  }

  const out: Record<string, unknown> = {};
  const sources: Record<string, string> = {};
  const origins: Record<string, { from: SettingOrigin; text?: string }> = {};
  for (const [field, d] of Object.entries(SETTINGS) as [string, SettingDef<unknown>][]) {
    const en = envName(d.name);
    let raw: string | undefined;
    let source = "default";
    let from: SettingOrigin = "default";
    if (props.has(d.name)) {
      raw = props.get(d.name);
      source = `-D${d.name}`;
      from = "-D";
    } else if (env[en] !== undefined) {
      raw = env[en];
      source = `environment ${en}`;
      from = "environment";
    } else if (file.has(d.name)) {
      raw = file.get(d.name);
      source = `properties file ${configFile}`;
      from = "file";
    }
    sources[d.name] = source;
    // A secret's text never leaves the loader: describeInForce reports it only as set or not.
    origins[d.name] = raw === undefined || d.secret ? { from } : { from, text: d.shown ? d.shown(raw.trim()) : raw.trim() };
    if (raw === undefined) {
      out[field] = d.default;
      continue;
    }
    const r = d.parse(raw);
    if (r.ok) out[field] = r.value;
    else problems.push(`${d.name} (from ${source}) ${r.reason}`);
  }

  const s = out as Omit<Settings, "sources" | "inForce">;
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
  return { ...s, sources, inForce: describeInForce(SETTINGS, s, origins) } as Settings;
}

const didYouMean = (name: string | undefined) => (name === undefined ? "" : `; did you mean ${name}?`);

/**
 * `SVC_*` variables that are not settings but are read by the tools around the services: the
 * `svc` command (SVC_URL, SVC_KEY, SVC_KEY_FILE, SVC_DEBUG), `npm start` (SVC_DATA_DIR and the
 * local servers' ports, SVC_SOURCE_MAPS), `npm test` (SVC_TEST_*) and `npm run image-check` (SVC_IMAGE_CHECK_NPROC).
 * A service started from such a shell sees them.
 */
export const OTHER_SVC_VARIABLES: readonly string[] = [
  "SVC_URL",
  "SVC_KEY",
  "SVC_KEY_FILE",
  "SVC_DEBUG",
  "SVC_DATA_DIR",
  "SVC_PG_PORT",
  "SVC_REDIS_PORT",
  "SVC_NATS_PORT",
  "SVC_TEST_KEEP_DATA",
  "SVC_TEST_VERBOSE",
  "SVC_SOURCE_MAPS",
  "SVC_IMAGE_CHECK_NPROC",
];

/**
 * `SVC_*` environment variables that name no setting (a misspelt one is otherwise ignored without
 * a word), each as a line for a start-up warning with the closest setting. A warning rather than
 * a refusal: the environment is shared with other programs. Settings themselves are validated by
 * loadSettings.
 */
export function unknownEnvironmentSettings(env: NodeJS.ProcessEnv = process.env): string[] {
  const byEnv = new Map(Object.values(SETTINGS).map((d) => [envName(d.name), d.name] as const));
  const out: string[] = [];
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith("SVC_") || byEnv.has(name) || OTHER_SVC_VARIABLES.includes(name)) continue;
    const near = closestName(name, byEnv.keys());
    out.push(`environment variable ${name} is not a setting and is ignored${near === undefined ? "" : `; did you mean ${near} (${byEnv.get(near)})?`}`);
  }
  return out;
}

/** Whether a host name or address is this machine's loopback (`localhost`, `127.x.y.z`, `::1`). */
export function isLoopback(host: string): boolean {
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
  "repositoryFormat",
  "repositoryScopeFromPath",
  "auth",
  "anonymousRights",
  "readOnly",
  "cacheTtlMs",
  "credentialDefaultLifetime",
  "credentialMaxLifetime",
  "trackKeyUsage",
  "uiAdmins",
  "uiDeploy",
  "profile",
  "rateLimit",
  "malwareAction",
  "vulnerabilityAction",
  "vulnerabilityThreshold",
  "denyListAction",
  "gateMinAge",
  "blockPrivateImportHosts",
  "webhook",
  "webhookEndpoints",
  "webhookAttempts",
  "webhookAllowInternal",
  "artifactsSeparateOrigin",
  "storageReclaimGraceMs",
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

/**
 * Settings an administrator may change while the deployment runs (`PUT /api/settings/<name>`,
 * the console's Settings page): stored by the admin service, announced over NATS and applied
 * without a restart, unless the operator fixed them at start (environment, `-D`, properties
 * file), which wins. Only settings whose every reader applies a change live are listed here:
 * the gateway's rate ceiling, the gate's settings, the Deploy module switch (gateway and
 * console), the webhook settings (the notifier reads them again together) and the audit
 * trail's retention (the admin service reads it at each purge).
 */
export const RUNTIME_SETTINGS = [
  "rateLimit", "malwareAction", "vulnerabilityAction", "vulnerabilityThreshold", "denyListAction", "gateMinAge", "blockPrivateImportHosts",
  "uiDeploy", "webhook", "webhookEndpoints", "webhookSecrets", "webhookAttempts", "webhookAllowInternal", "webhookRetryBaseMs", "webhookTimeoutMs", "webhookHistoryMs",
  "auditRetentionMs",
] as const satisfies readonly (keyof Defs)[];
export type RuntimeSetting = (typeof RUNTIME_SETTINGS)[number];

/**
 * Run-time settings the spec says are set "for a tenant": each may be overridden for one tenant
 * (`PUT /api/settings/<name>?tenant=<t>`); the override wins over the deployment's run-time value
 * for that tenant, and a value the operator fixed at start wins over both.
 */
export const TENANT_SETTINGS = ["malwareAction", "vulnerabilityAction", "vulnerabilityThreshold", "denyListAction", "gateMinAge"] as const satisfies readonly RuntimeSetting[];
export type TenantSetting = (typeof TENANT_SETTINGS)[number];

/** The run-time setting a name as the spec writes it (`rate-limit`, or `svc.rate-limit`) means; undefined for any other. */
export function runtimeSetting(name: string): RuntimeSetting | undefined {
  const full = name.startsWith("svc.") ? name : `svc.${name}`;
  return RUNTIME_SETTINGS.find((f) => SETTINGS[f].name === full);
}

/** Where the operator fixed a setting at start (`environment SVC_RATE_LIMIT`, `-Dsvc.rate-limit`, …); undefined when it is the default. */
export function fixedAt(s: Pick<Settings, "sources">, field: keyof Defs): string | undefined {
  const source = s.sources[SETTINGS[field].name];
  return source === undefined || source === "default" ? undefined : source;
}

/** A setting value written back as text, the way its parser reads it. */
export function settingText(value: unknown): string {
  if (Array.isArray(value)) return value.join(",");
  return value === undefined || value === null ? "" : String(value);
}

/**
 * A run-time value as it may be shown outside the loader (`GET /api/settings`, the change list,
 * a log line, the console): undefined for a secret, masked where part of it is one
 * (`svc.webhook-endpoints`' receivers' tokens), else its text.
 */
export function shownSettingText(field: keyof Defs, text: string): string | undefined {
  const d = SETTINGS[field] as SettingDef<unknown>;
  if (d.secret) return undefined;
  return d.shown ? d.shown(text) : text;
}
