import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { lookup as dnsLookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";
import { invalid } from "@svc/contracts";

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

/** Loopback, private, link-local, CGNAT, unique-local, multicast and reserved ranges. */
const NOT_PUBLIC = (() => {
  const b = new BlockList();
  for (const [net, bits] of [["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["127.0.0.0", 8], ["169.254.0.0", 16], ["172.16.0.0", 12], ["192.0.0.0", 24], ["192.168.0.0", 16], ["198.18.0.0", 15], ["224.0.0.0", 3]] as const) b.addSubnet(net, bits, "ipv4");
  for (const [net, bits] of [["::", 127], ["::1", 128], ["fc00::", 7], ["fe80::", 10], ["ff00::", 8]] as const) b.addSubnet(net, bits, "ipv6");
  return b;
})();

/** Whether an IP address is one a server on the internet could have. IPv4-mapped IPv6 is judged as IPv4. */
export function isPublicAddress(ip: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  const addr = mapped ? mapped[1]! : ip;
  const family = isIP(addr);
  if (family === 0) return false;
  return !NOT_PUBLIC.check(addr, family === 4 ? "ipv4" : "ipv6");
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
  const bad = addresses.find((a) => !isPublicAddress(a));
  if (bad !== undefined || addresses.length === 0) return `upstream host ${host} is not a public address (block-private-import-hosts is on)`;
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
