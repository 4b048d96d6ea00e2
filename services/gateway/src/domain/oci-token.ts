import { createHmac, timingSafeEqual } from "node:crypto";
import { Right, rightsFor, type CompiledGrant } from "@svc/grants";

/*
 * The OCI token flow (docs/integration/oci.md, "Tokens"): a 401 on /v2/ carries a Bearer
 * challenge naming `/v2/token`; the client exchanges its key (Basic, the key as password) or
 * nothing (anonymous) there for a short-lived token holding the scopes it asked for that the
 * caller holds, then sends `Authorization: Bearer <token>` on /v2/ only. The token is an HMAC
 * over its claims with a key derived from svc.internal-secret, so every gateway node verifies
 * it without shared state; the key (or person) it was issued to is looked up again on each use,
 * so a revoked key's tokens stop working as its cache entry goes.
 */

/**
 * One image's actions a token allows: `repository:<repository>/<image>:pull,push`; or the
 * catalog's, `registry:catalog:*` (repository `*`, no image name: a pull of the list of every
 * repository's images, held with repository:read over `*`, as `/v2/_catalog` asks with a key).
 */
export interface OciScope {
  repository: string;
  name: string;
  pull: boolean;
  push: boolean;
}

export interface TokenClaims {
  tenant: string;
  /** Who the token was issued to: `key`, `person` or `anonymous` (id ""). */
  kind: "key" | "person" | "anonymous";
  id: string;
  scopes: OciScope[];
  /** Issued at and expires at, epoch seconds. */
  iat: number;
  exp: number;
}

/** How long a token lives: long enough for one pull or push to start, short enough that a leaked one is soon useless. */
export const TOKEN_LIFETIME_S = 300;
/** Tokens are told from keys (`svck_…`) at a glance. */
const PREFIX = "svcot_";

export type TokenSigner = ReturnType<typeof tokenSignerFactory>;

export function tokenSignerFactory(internalSecret: string) {
  // A key of its own, so a token can never be mistaken for an internal identity signature.
  const key = createHmac("sha256", internalSecret).update("svc oci token v1").digest();
  const mac = (body: string) => createHmac("sha256", key).update(body).digest("base64url");

  function sign(claims: TokenClaims): string {
    const body = Buffer.from(JSON.stringify(claims)).toString("base64url");
    return `${PREFIX}${body}.${mac(body)}`;
  }

  /** The claims of a token this deployment signed that has not expired; undefined for any other. */
  function verify(token: string, tenant: string, nowMs: number): TokenClaims | undefined {
    if (!token.startsWith(PREFIX)) return undefined;
    const [body, sig, extra] = token.slice(PREFIX.length).split(".");
    if (!body || !sig || extra !== undefined) return undefined;
    const want = Buffer.from(mac(body));
    const got = Buffer.from(sig);
    if (want.length !== got.length || !timingSafeEqual(want, got)) return undefined;
    let claims: TokenClaims;
    try {
      claims = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as TokenClaims;
    } catch {
      return undefined;
    }
    if (claims.tenant !== tenant || !(claims.exp * 1000 > nowMs) || !Array.isArray(claims.scopes)) return undefined;
    return claims;
  }

  return { sign, verify };
}

/** The catalog's scope as the token protocol names it (distribution's `registry:catalog:*`). */
const CATALOG_SCOPE = "registry:catalog:*";
const isCatalog = (s: Pick<OciScope, "repository" | "name">) => s.repository === "*" && s.name === "";

/**
 * The scopes a token request asks for: each `scope` parameter holds one or more
 * space-separated `repository:<repository>/<image>:<actions>` (`pull`, `push`, `delete`, `*`),
 * or `registry:catalog:*`. Anything else (another resource type, a name without an image, an
 * unknown action) is left out, never an error, as the token protocol asks.
 */
export function requestedScopes(scope: string | string[] | undefined): OciScope[] {
  const texts = (Array.isArray(scope) ? scope : scope === undefined ? [] : [scope]).flatMap((s) => s.split(" ")).filter((s) => s !== "");
  const out: OciScope[] = [];
  for (const text of texts) {
    if (text === CATALOG_SCOPE) {
      out.push({ repository: "*", name: "", pull: true, push: false });
      continue;
    }
    const first = text.indexOf(":");
    const last = text.lastIndexOf(":");
    if (first < 0 || last === first || text.slice(0, first) !== "repository") continue;
    const full = text.slice(first + 1, last);
    const slash = full.indexOf("/");
    if (slash <= 0 || slash === full.length - 1) continue;
    const actions = text.slice(last + 1).split(",");
    // `*` is every action (containers/image asks for it to delete); a delete is a write here, as a push is.
    const all = actions.includes("*");
    const s: OciScope = { repository: full.slice(0, slash), name: full.slice(slash + 1), pull: all || actions.includes("pull"), push: all || actions.includes("push") || actions.includes("delete") };
    if (s.pull || s.push) out.push(s);
  }
  return out;
}

/**
 * What a caller gets of what it asked: pull where it holds repository:read on the image, push
 * where it holds repository:write (its own grants and the keyless caller's, svc.anonymous-rights).
 * A scope granted nothing is left out.
 */
export function grantedScopes(asked: readonly OciScope[], anonymous: readonly CompiledGrant[], grants: readonly CompiledGrant[] | undefined, nowMs: number): OciScope[] {
  const out: OciScope[] = [];
  for (const s of asked) {
    const path = isCatalog(s) ? "" : `${s.name}/`;
    let held = rightsFor(anonymous as CompiledGrant[], s.repository, path, nowMs);
    if (grants) held |= rightsFor(grants as CompiledGrant[], s.repository, path, nowMs);
    const g = { ...s, pull: s.pull && (held & Right.repositoryRead) !== 0, push: s.push && (held & Right.repositoryWrite) !== 0 };
    if (g.pull || g.push) out.push(g);
  }
  return out;
}

/**
 * The image a `/v2/<repository>/<image…>/…` path names (the artifact target's path, after the
 * repository): everything before the last `blobs`, `manifests`, `tags` or `referrers` segment;
 * undefined when there is none.
 */
export function ociImageName(path: string): string | undefined {
  const segments = path.split("/");
  for (let i = segments.length - 1; i > 0; i--) {
    const s = segments[i];
    if (s === "blobs" || s === "manifests" || s === "tags" || s === "referrers") return segments.slice(0, i).join("/");
  }
  return undefined;
}

/** Whether a token's scopes allow a request on `repository`'s `path` (pull to read, push to write; the catalog: repository `*`, no path). */
export function tokenAllows(scopes: readonly OciScope[], repository: string, path: string, write: boolean): boolean {
  if (repository === "*") return path === "" && !write && scopes.some((s) => isCatalog(s) && s.pull);
  const name = ociImageName(path);
  if (name === undefined) return false;
  return scopes.some((s) => s.repository === repository && s.name === name && (write ? s.push : s.pull));
}

/** The Bearer challenge of a 401 on /v2/: where to get a token and, when the path names an image, the scope to ask for. */
export function bearerChallenge(origin: string, host: string, scope: string | undefined, error?: "insufficient_scope" | "invalid_token"): string {
  let c = `Bearer realm="${origin}/v2/token",service="${host}"`;
  if (scope) c += `,scope="${scope}"`;
  if (error) c += `,error="${error}"`;
  return c;
}

/** The scope a request on `repository`'s `path` needs, as the challenge names it; undefined when the path names no image. */
export function challengeScope(repository: string, path: string, write: boolean): string | undefined {
  if (repository === "*") return path === "" && !write ? CATALOG_SCOPE : undefined;
  const name = ociImageName(path);
  return name === undefined ? undefined : `repository:${repository}/${name}:${write ? "pull,push" : "pull"}`;
}
