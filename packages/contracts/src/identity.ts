/**
 * The gateway's signed identity header: upstream services trust only this, never a
 * client-supplied identity. The gateway strips every header below from incoming requests
 * before adding its own.
 */
export const IDENTITY_HEADER = "x-svc-identity";
export const IDENTITY_TS_HEADER = "x-svc-identity-ts";
export const IDENTITY_SIG_HEADER = "x-svc-identity-sig";
/** Makes each signature unique, so an upstream can refuse one it has seen before. */
export const IDENTITY_NONCE_HEADER = "x-svc-identity-nonce";
/** How the signature binds the body: `sha256=<base64url>` or `trailer`; absent: no body. */
export const IDENTITY_BODY_HEADER = "x-svc-identity-body";
/** The trailer after a streamed body (`trailer` binding): an HMAC over the signature and the body's SHA-256. */
export const IDENTITY_BODY_TRAILER = "x-svc-identity-body-sig";
/**
 * A stream that hashed its bytes on their way (an upstream's check of a signed body) answers,
 * under this key, their SHA-256 (hex) and count once it has ended, undefined before: the blob
 * store takes them instead of hashing the same bytes a second time.
 */
export const SHA256_OF_BYTES: unique symbol = Symbol.for("svc.sha256-of-bytes");
export type HashedBytes = { [SHA256_OF_BYTES]?: () => { sha256: string; size: number } | undefined };
/**
 * An OCI mount's source the gateway found the caller may read (`<repository>/<image>`, the
 * request's `from`), set by the gateway alone (a client's is dropped) and signed with the
 * request: the artifacts service mounts only from it.
 */
export const MOUNT_SOURCE_HEADER = "x-svc-mount-readable";
/**
 * The client address the gateway saw (svc.trusted-proxies applied) and the label of the key that
 * made the request (percent-encoded UTF-8): set by the gateway alone on API requests (a client's
 * own are dropped) and signed with them. Upstreams record them in the audit trail and name the
 * key by its label in their log lines.
 */
export const CLIENT_ADDRESS_HEADER = "x-svc-client-address";
export const KEY_LABEL_HEADER = "x-svc-key-label";
export const IDENTITY_HEADERS = [IDENTITY_HEADER, IDENTITY_TS_HEADER, IDENTITY_SIG_HEADER, IDENTITY_NONCE_HEADER, IDENTITY_BODY_HEADER, IDENTITY_BODY_TRAILER] as const;

/** Who the gateway says made the request. Encoded as compact text: `<kind>:<tenant>:<id>`. */
export interface Principal {
  kind: "key" | "anonymous" | "person" | "system";
  tenant: string;
  /** Key id (SHA-256 hex), person id, or a service name for system calls; "" for anonymous. */
  id: string;
}

export function encodePrincipal(p: Principal): string {
  return `${p.kind}:${p.tenant}:${p.id}`;
}

export function decodePrincipal(text: string): Principal | undefined {
  const a = text.indexOf(":");
  const b = a < 0 ? -1 : text.indexOf(":", a + 1);
  if (a < 0 || b < 0) return undefined;
  const kind = text.slice(0, a);
  if (kind !== "key" && kind !== "anonymous" && kind !== "person" && kind !== "system") return undefined;
  return { kind, tenant: text.slice(a + 1, b), id: text.slice(b + 1) };
}

/** Headers that carry a key; the gateway never forwards them upstream. */
export const KEY_HEADER = "service-repository-key";
export const REPOSITORY_NAME_HEADER = "service-repository-name";
