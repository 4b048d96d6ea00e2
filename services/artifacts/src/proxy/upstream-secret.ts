import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";

/** Upstream credentials as an operator gives them: a user and password, or a bearer token. */
export type UpstreamCredentials = { username: string; password: string } | { token: string };

const VERSION = "v1";
const INFO = "svc artifacts upstream credentials";

/** A 256-bit key derived (HKDF-SHA256) from the server's secret setting. */
function keyFrom(secret: string): Buffer {
  if (secret.length === 0) throw new Error("no secret to derive the upstream credential key from");
  return Buffer.from(hkdfSync("sha256", secret, Buffer.alloc(0), INFO, 32));
}

/** Parses what a client sent as `upstream.credentials`; answers why not when it is malformed. */
export function parseUpstreamCredentials(value: unknown): { ok: true; credentials: UpstreamCredentials } | { ok: false; reason: string } {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { ok: false, reason: "credentials must be {\"username\",\"password\"} or {\"token\"}" };
  const v = value as Record<string, unknown>;
  const keys = Object.keys(v).sort().join(",");
  if (keys === "token" && typeof v.token === "string" && v.token.length > 0) return { ok: true, credentials: { token: v.token } };
  if (keys === "password,username" && typeof v.username === "string" && v.username.length > 0 && typeof v.password === "string") {
    return { ok: true, credentials: { username: v.username, password: v.password } };
  }
  return { ok: false, reason: "credentials must be {\"username\",\"password\"} or {\"token\"} with non-empty strings" };
}

/** Seals credentials with AES-256-GCM: `v1.<iv>.<tag>.<ciphertext>`, each part base64url. */
export function sealCredentials(credentials: UpstreamCredentials, secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", keyFrom(secret), iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(credentials), "utf8"), cipher.final()]);
  return [VERSION, iv, cipher.getAuthTag(), body].map((p) => (typeof p === "string" ? p : p.toString("base64url"))).join(".");
}

/** Opens what {@link sealCredentials} made; throws (without the secret or the text) when it was altered or the secret differs. */
export function openCredentials(sealed: string, secret: string): UpstreamCredentials {
  const [version, iv, tag, body, ...rest] = sealed.split(".");
  if (version !== VERSION || !iv || !tag || body === undefined || rest.length > 0) throw new Error("sealed upstream credentials are malformed");
  const decipher = createDecipheriv("aes-256-gcm", keyFrom(secret), Buffer.from(iv, "base64url"));
  decipher.setAuthTag(Buffer.from(tag, "base64url"));
  let text: string;
  try {
    text = Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString("utf8");
  } catch {
    throw new Error("sealed upstream credentials do not open with this server's secret");
  }
  return JSON.parse(text) as UpstreamCredentials;
}

/** The Authorization header value for an upstream request. */
export function authorizationFor(credentials: UpstreamCredentials): string {
  return "token" in credentials
    ? `Bearer ${credentials.token}`
    : `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`, "utf8").toString("base64")}`;
}
