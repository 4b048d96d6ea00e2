import { createHash } from "node:crypto";
import { blake2b } from "@noble/hashes/blake2b";
import { Transform } from "node:stream";
import { ServiceError, invalid } from "@svc/contracts";

/**
 * What a client may require of a PUT so concurrent publishers do not overwrite each other
 * unknowingly: preconditions on the current artifact (If-Match, If-None-Match) and the digests it
 * declares for the body (the headers Artifactory and Nexus clients send). Preconditions are
 * checked under the path's lock, so two publishers racing on one path cannot both pass.
 */
export interface Preconditions {
  /** If-Match: "*" (something is there) or entity tags, one of which must be the current one. */
  ifMatch?: "*" | string[];
  /** If-None-Match: "*" (nothing is there) or entity tags none of which may be the current one. */
  ifNoneMatch?: "*" | string[];
}

export type DigestName = "sha256" | "sha1" | "md5" | "blake2_256" | "sha384" | "sha512";
/** Declared digests (lowercase hex) and the header each came from. */
export type DeclaredDigests = Partial<Record<DigestName, { hex: string; header: string }[]>>;

/**
 * The ETag a GET, a HEAD and a PUT answer for an artifact: strong, its content's SHA-256 in
 * quotes (the path index's digest), so the same bytes have the same tag wherever they are.
 */
export function etagOf(sha256: string): string {
  return `"${sha256}"`;
}

/** Entity tags compared without the weak marker (a client may send one back weakened). */
export const opaque = (tag: string) => tag.trim().replace(/^W\//, "");

function parseTags(value: string | string[] | undefined): "*" | string[] | undefined {
  if (value === undefined) return undefined;
  const text = Array.isArray(value) ? value.join(",") : value;
  if (text.trim() === "*") return "*";
  const tags = text.split(",").map(opaque).filter((t) => t !== "");
  return tags.length > 0 ? tags : undefined;
}

export function parsePreconditions(headers: Record<string, string | string[] | undefined>): Preconditions {
  return { ifMatch: parseTags(headers["if-match"]), ifNoneMatch: parseTags(headers["if-none-match"]) };
}

/**
 * Throws 412 unless the current artifact meets the preconditions. `sha256` is the digest the
 * index holds for the path (undefined: nothing there); a tag matches the ETag a GET answered,
 * which is that SHA-256 in quotes.
 */
export function checkPreconditions(p: Preconditions, current: { sha256?: string }): void {
  const there = current.sha256 !== undefined;
  const tags = there ? [etagOf(current.sha256!)] : [];
  const matches = (wanted: string[]) => wanted.some((t) => tags.includes(t));
  if (p.ifMatch !== undefined && !(p.ifMatch === "*" ? there : matches(p.ifMatch))) {
    throw new ServiceError("precondition_failed", there ? "If-Match: the artifact has changed since that version; nothing was stored" : "If-Match: there is no artifact at this path; nothing was stored");
  }
  if (p.ifNoneMatch !== undefined && (p.ifNoneMatch === "*" ? there : matches(p.ifNoneMatch))) {
    throw new ServiceError("precondition_failed", "If-None-Match: an artifact is already at this path; nothing was stored");
  }
}

const HEX_LENGTH: Record<DigestName, number> = { sha256: 64, sha1: 40, md5: 32, blake2_256: 64, sha384: 96, sha512: 128 };
const HEADERS: [string, DigestName][] = [
  ["x-checksum-sha256", "sha256"],
  ["x-checksum-sha1", "sha1"],
  ["x-checksum-md5", "md5"],
];

/** Reads the declared digests; a malformed one is refused (400) before the body is read. */
export function parseDeclaredDigests(headers: Record<string, string | string[] | undefined>): DeclaredDigests {
  const out: DeclaredDigests = {};
  const add = (name: DigestName, hex: string, header: string) => (out[name] ??= []).push({ hex, header });
  for (const [header, name] of HEADERS) {
    const v = headers[header];
    if (v === undefined) continue;
    const hex = String(v).trim().toLowerCase();
    if (!new RegExp(`^[0-9a-f]{${HEX_LENGTH[name]}}$`).test(hex)) throw invalid(header, `${header} must be the ${name.toUpperCase()} of the body in hexadecimal (${HEX_LENGTH[name]} digits)`);
    add(name, hex, header);
  }
  const contentMd5 = headers["content-md5"];
  if (contentMd5 !== undefined) {
    const bytes = /^[A-Za-z0-9+/]{22}==$/.test(String(contentMd5).trim()) ? Buffer.from(String(contentMd5).trim(), "base64") : undefined;
    if (!bytes || bytes.length !== 16) throw invalid("content-md5", "Content-MD5 must be the MD5 of the body in base64 (24 characters)");
    add("md5", bytes.toString("hex"), "content-md5");
  }
  return out;
}

interface Hasher {
  update(chunk: Buffer): unknown;
  digest(): string;
}
const HASHERS: Record<Exclude<DigestName, "sha256">, () => Hasher> = {
  sha1: () => node("sha1"),
  md5: () => node("md5"),
  // What npm's `integrity` declares (a proxied tarball is checked against it as it is stored).
  sha384: () => node("sha384"),
  sha512: () => node("sha512"),
  // BLAKE2b with a 32-byte digest (what PyPI's blake2_256_digest is): its length is a parameter
  // of the hash's initial state, so it is not a cut of Node's blake2b512.
  blake2_256: () => {
    const h = blake2b.create({ dkLen: 32 });
    return { update: (chunk) => h.update(chunk), digest: () => Buffer.from(h.digest()).toString("hex") };
  },
};
function node(algorithm: string): Hasher {
  const h = createHash(algorithm);
  return { update: (chunk) => h.update(chunk), digest: () => h.digest("hex") };
}

/**
 * Hashes the body on its way to the store with the digests declared besides SHA-256 (which the
 * store computes anyway); `verify` then throws 400 naming the first header that does not match.
 */
export function digestCheck(declared: DeclaredDigests): { through: Transform[]; verify: (sha256: string) => void } {
  const hashes: Partial<Record<DigestName, Hasher>> = {};
  for (const name of ["sha1", "md5", "blake2_256", "sha384", "sha512"] as const) if (declared[name]) hashes[name] = HASHERS[name]();
  const extra = Object.values(hashes);
  const through =
    extra.length === 0
      ? []
      : [
          new Transform({
            transform(chunk: Buffer, _enc, cb) {
              for (const h of extra) h.update(chunk);
              cb(null, chunk);
            },
          }),
        ];
  const verify = (sha256: string) => {
    const actual: Partial<Record<DigestName, string>> = { sha256 };
    for (const [name, h] of Object.entries(hashes) as [DigestName, Hasher][]) actual[name] = h.digest();
    for (const [name, wanted] of Object.entries(declared) as [DigestName, { hex: string; header: string }[]][]) {
      const bad = wanted.find((w) => w.hex !== actual[name]);
      if (bad) throw invalid(bad.header, `${bad.header} does not match the body received (${name === "blake2_256" ? "BLAKE2b-256" : name.toUpperCase()} ${actual[name]}): nothing was stored`);
    }
  };
  return { through, verify };
}
