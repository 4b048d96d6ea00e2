import { isRepositoryName } from "@svc/grants";
import { OciError } from "./oci-errors.js";

/**
 * What a `/v2/<repository>/<name…>/…` request asks for. The repository is the first segment; the
 * image name is everything up to the last `/blobs/`, `/manifests/`, `/tags/` or `/referrers/`
 * (names have slashes: `team/app`).
 */
export type OciRoute =
  | { kind: "blob"; repository: string; name: string; digest: Digest }
  | { kind: "uploads"; repository: string; name: string }
  | { kind: "upload"; repository: string; name: string; id: string }
  | { kind: "manifest"; repository: string; name: string; reference: string }
  | { kind: "tags"; repository: string; name: string }
  | { kind: "referrers"; repository: string; name: string; digest: Digest };

/** A content digest of a supported algorithm: `sha256:<64 hex>` or `sha512:<128 hex>`. */
export interface Digest {
  algorithm: "sha256" | "sha512";
  hex: string;
  /** `algorithm:hex`. */
  text: string;
}

const HEX_LENGTH = { sha256: 64, sha512: 128 } as const;
/** The spec's name grammar, one path component. */
const NAME_COMPONENT = /^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$/;
const TAG = /^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$/;
const UPLOAD_ID = /^[0-9a-f-]{36}$/;

/** Parses a digest; undefined when it is not one (the caller picks the error code). */
export function parseDigest(text: string): Digest | undefined {
  const m = /^([a-z0-9]+(?:[+._-][a-z0-9]+)*):([a-zA-Z0-9=_-]+)$/.exec(text);
  if (!m) return undefined;
  const algorithm = m[1]!;
  if (algorithm !== "sha256" && algorithm !== "sha512") return undefined;
  const hex = m[2]!;
  if (hex.length !== HEX_LENGTH[algorithm] || !/^[0-9a-f]+$/.test(hex)) return undefined;
  return { algorithm, hex, text };
}

export function digestOrRefuse(text: string | undefined, code: "DIGEST_INVALID" | "BLOB_UNKNOWN" | "MANIFEST_UNKNOWN" = "DIGEST_INVALID"): Digest {
  const d = text === undefined ? undefined : parseDigest(text);
  if (!d) throw new OciError(code, `"${text ?? ""}" is not a digest this registry supports (sha256:<64 hex digits> or sha512:<128 hex digits>)`, { status: 400 });
  return d;
}

export const isTag = (s: string): boolean => TAG.test(s);
export const isName = (name: string): boolean => name.length <= 255 && name.split("/").every((c) => NAME_COMPONENT.test(c));

/** Reads the route from a request URL (`/v2/…`, query ignored); throws NAME_INVALID or NAME_UNKNOWN. */
export function parseOciRoute(url: string): OciRoute {
  const q = url.indexOf("?");
  const path = (q < 0 ? url : url.slice(0, q)).slice("/v2/".length);
  let segments: string[];
  try {
    segments = path.split("/").map(decodeURIComponent);
  } catch {
    throw new OciError("NAME_INVALID", "the path is not valid percent-encoding");
  }
  const repository = segments[0] ?? "";
  if (!isRepositoryName(repository)) throw new OciError("NAME_INVALID", `"${repository}" is not a repository name`);
  const rest = segments.slice(1);
  const at = (word: string) => rest.lastIndexOf(word);
  const nameOf = (end: number) => {
    const name = rest.slice(0, end).join("/");
    if (!isName(name)) throw new OciError("NAME_INVALID", `"${name}" is not a valid image name (lowercase letters, digits and separators, components joined by /)`);
    return name;
  };
  const tail = (from: number) => rest.slice(from);
  const b = at("blobs");
  if (b > 0 && tail(b)[1] === "uploads") {
    const after = tail(b + 2);
    if (after.length === 0 || (after.length === 1 && after[0] === "")) return { kind: "uploads", repository, name: nameOf(b) };
    if (after.length === 1 && UPLOAD_ID.test(after[0]!)) return { kind: "upload", repository, name: nameOf(b), id: after[0]! };
    throw new OciError("BLOB_UPLOAD_UNKNOWN", "no such upload");
  }
  if (b > 0 && tail(b).length === 2) return { kind: "blob", repository, name: nameOf(b), digest: digestOrRefuse(tail(b)[1], "DIGEST_INVALID") };
  const m = at("manifests");
  if (m > 0 && tail(m).length === 2) {
    const reference = tail(m)[1]!;
    if (!isTag(reference) && !parseDigest(reference)) throw new OciError("MANIFEST_INVALID", `"${reference}" is neither a tag nor a supported digest`, { status: 400 });
    return { kind: "manifest", repository, name: nameOf(m), reference };
  }
  const t = at("tags");
  if (t > 0 && tail(t).length === 2 && tail(t)[1] === "list") return { kind: "tags", repository, name: nameOf(t) };
  const r = at("referrers");
  if (r > 0 && tail(r).length === 2) return { kind: "referrers", repository, name: nameOf(r), digest: digestOrRefuse(tail(r)[1]) };
  throw new OciError("NAME_UNKNOWN", `no registry route for /v2/${path}`);
}
