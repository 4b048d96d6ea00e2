import { createHash, randomBytes } from "node:crypto";
import { crc32 } from "node:zlib";

/**
 * Key format: `svck_<tenant>.<secret><checksum>`.
 * - secret: 32 random bytes, base64url without padding (43 characters)
 * - checksum: CRC32 (big-endian, 4 bytes) of everything before it, base64url without padding (6 characters)
 * The prefix and checksum let a scanner recognise a key offline and let the server refuse a
 * malformed key without looking anything up.
 */
export const KEY_PREFIX = "svck_";
const SECRET_BYTES = 32;
const SECRET_CHARS = 43;
const CHECKSUM_CHARS = 6;
const TENANT_RE = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const B64URL_RE = /^[A-Za-z0-9_-]+$/;

export type KeyProblem = "prefix" | "tenant" | "length" | "alphabet" | "checksum";

export interface ParsedKey {
  tenant: string;
  /** SHA-256 hex of the whole key: the only thing ever stored. */
  id: string;
}

/** A tenant is 1-63 lowercase letters, digits and inner hyphens (a DNS label). */
export function isTenant(value: string): boolean {
  return TENANT_RE.test(value);
}

function checksum(body: string): string {
  const buf = Buffer.alloc(4);
  buf.writeUInt32BE(crc32(body) >>> 0, 0);
  return buf.toString("base64url");
}

export function makeKey(tenant = "default"): string {
  if (!isTenant(tenant)) {
    throw new Error(`"${tenant}" is not a valid tenant: use 1-63 lowercase letters, digits and inner hyphens`);
  }
  const body = `${KEY_PREFIX}${tenant}.${randomBytes(SECRET_BYTES).toString("base64url")}`;
  return body + checksum(body);
}

export function keyId(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/**
 * Checks the form of a key without any lookup. Never echoes the key in the result, so a
 * caller can log the problem safely.
 */
export function parseKey(key: string): { ok: true; key: ParsedKey } | { ok: false; problem: KeyProblem } {
  if (!key.startsWith(KEY_PREFIX)) return { ok: false, problem: "prefix" };
  const dot = key.indexOf(".", KEY_PREFIX.length);
  if (dot < 0) return { ok: false, problem: "tenant" };
  const tenant = key.slice(KEY_PREFIX.length, dot);
  if (!isTenant(tenant)) return { ok: false, problem: "tenant" };
  const rest = key.slice(dot + 1);
  if (rest.length !== SECRET_CHARS + CHECKSUM_CHARS) return { ok: false, problem: "length" };
  if (!B64URL_RE.test(rest)) return { ok: false, problem: "alphabet" };
  const body = key.slice(0, key.length - CHECKSUM_CHARS);
  if (checksum(body) !== key.slice(key.length - CHECKSUM_CHARS)) return { ok: false, problem: "checksum" };
  return { ok: true, key: { tenant, id: keyId(key) } };
}
