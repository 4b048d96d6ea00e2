import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { lookup as dnsLookup } from "node:dns/promises";
import { isIP } from "node:net";
import { invalid } from "@svc/contracts";
import { classifyAddress, describeVerdict } from "@svc/kit";

/** What a proxy repository's `upstream` holds: the URL and, optionally, how to sign in there. */
export type UpstreamCredentials = { token: string } | { username: string; password: string };
export interface UpstreamConfig {
  url: string;
  credentials?: UpstreamCredentials;
}

/** Reads the `upstream` of `POST /api/repositories`; a bad shape is a 400 naming the field. */
export function parseUpstream(body: unknown): UpstreamConfig {
  if (!body || typeof body !== "object") throw invalid("upstream", "upstream must be an object with a url");
  const { url, credentials } = body as { url?: unknown; credentials?: unknown };
  if (typeof url !== "string") throw invalid("upstream.url", "upstream.url must be a URL");
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalid("upstream.url", "upstream.url must be a URL");
  }
  if (parsed.username || parsed.password) throw invalid("upstream.url", "upstream.url must not carry credentials: give them in upstream.credentials");
  if (credentials === undefined) return { url: parsed.href };
  const c = credentials as Record<string, unknown>;
  if (c && typeof c === "object" && typeof c.token === "string" && c.token && Object.keys(c).length === 1) {
    return { url: parsed.href, credentials: { token: c.token } };
  }
  if (c && typeof c === "object" && typeof c.username === "string" && typeof c.password === "string" && c.username && Object.keys(c).length === 2) {
    return { url: parsed.href, credentials: { username: c.username, password: c.password } };
  }
  throw invalid("upstream.credentials", 'upstream.credentials must be {"token"} or {"username","password"}');
}

/**
 * Whether an IP address is one a server on the internet could have: the rule webhooks follow
 * (kit's address-policy: loopback, private, link-local, cloud metadata, unique-local, multicast,
 * reserved ranges are not; IPv4 carried in IPv6 is judged as IPv4).
 */
export function isPublicAddress(ip: string): boolean {
  return classifyAddress(ip).allowed;
}

export type Lookup = (host: string) => Promise<string[]>;
const systemLookup: Lookup = async (host) => (await dnsLookup(host, { all: true })).map((a) => a.address);

/**
 * The rule for upstream addresses: with `block-private-import-hosts` on, only https to hosts
 * whose every address is public; off, http and private addresses are allowed too. Answers the
 * reason a URL is refused, or undefined. The fetch checks the connected address again.
 */
export async function upstreamRefusal(url: string, blockPrivate: boolean, lookup: Lookup = systemLookup): Promise<string | undefined> {
  const u = new URL(url);
  if (u.protocol !== "https:" && u.protocol !== "http:") return "upstream.url must be an http(s) URL";
  if (!blockPrivate) return undefined;
  if (u.protocol !== "https:") return "upstream.url must be https (block-private-import-hosts is on)";
  const host = u.hostname.replace(/^\[|\]$/g, "");
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : await lookup(host);
  } catch {
    return `upstream host ${host} does not resolve`;
  }
  if (addresses.length === 0) return `upstream host ${host} does not resolve`;
  const bad = addresses.map((a) => classifyAddress(a)).find((v) => !v.allowed);
  if (bad !== undefined) return `upstream host ${host} is not a public address: ${describeVerdict(bad)} (block-private-import-hosts is on)`;
  return undefined;
}

/**
 * Credentials at rest: AES-256-GCM under a key derived with HKDF-SHA256 from
 * `svc.internal-secret` (info "svc proxy upstream credentials"), a fresh 12-byte IV each time.
 * Stored as base64 of iv | tag | ciphertext.
 */
function credentialKey(secret: string): Buffer {
  return Buffer.from(hkdfSync("sha256", secret, "", "svc proxy upstream credentials", 32));
}

export function sealCredentials(c: UpstreamCredentials, secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", credentialKey(secret), iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(c), "utf8"), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64");
}

export function openCredentials(sealed: string, secret: string): UpstreamCredentials {
  const raw = Buffer.from(sealed, "base64");
  const decipher = createDecipheriv("aes-256-gcm", credentialKey(secret), raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8")) as UpstreamCredentials;
}

/** The Authorization header an upstream is sent. */
export function authorization(c: UpstreamCredentials | undefined): string | undefined {
  if (!c) return undefined;
  if ("token" in c) return `Bearer ${c.token}`;
  return `Basic ${Buffer.from(`${c.username}:${c.password}`).toString("base64")}`;
}
