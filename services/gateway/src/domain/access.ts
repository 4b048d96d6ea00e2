import { ServiceError, invalid } from "@svc/contracts";
import {
  ALL_RIGHTS,
  Right,
  anyRights,
  compileGrants,
  deploymentRights,
  isRepositoryName,
  parseArtifactUrl,
  rightsFor,
  type CompiledGrant,
  type GrantSpec,
} from "@svc/grants";
import type { KeyRights } from "./rights-cache.js";

/** What a request asks for, read from its method and path. */
export type Target =
  | { kind: "artifact"; repository: string; path: string; write: boolean }
  | { kind: "api"; write: boolean; capabilities: boolean; credentialId: string | undefined; metrics: boolean }
  | { kind: "open" };

const CREDENTIAL_PATH = /^\/api\/credentials\/([0-9a-f]{64})(?:[/?]|$)/;

export function classify(method: string, url: string): Target {
  const write = method !== "GET" && method !== "HEAD";
  if (url.startsWith("/repository/") || url === "/repository") {
    const a = parseArtifactUrl(url);
    return { kind: "artifact", repository: a.repository, path: a.path, write };
  }
  if (url.startsWith("/api/") || url === "/api" || url.startsWith("/api?")) {
    const pathname = url.split("?", 1)[0]!;
    try {
      decodeURIComponent(pathname);
    } catch {
      throw invalid("path", "the path is not valid percent-encoding");
    }
    return {
      kind: "api",
      write,
      capabilities: pathname === "/api/capabilities",
      credentialId: CREDENTIAL_PATH.exec(url)?.[1],
      metrics: false,
    };
  }
  // The deployment's meters: manage:read over * (of this, the operator's, tenant), like /api/.
  if (url === "/metrics" || url.startsWith("/metrics?")) return { kind: "api", write, capabilities: false, credentialId: undefined, metrics: true };
  return { kind: "open" };
}

export interface AccessPolicy {
  auth: boolean;
  readOnly: boolean;
  anonymous: CompiledGrant[];
}

export function accessPolicy(s: { auth: boolean; readOnly: boolean; anonymousRights: GrantSpec[] }): AccessPolicy {
  return { auth: s.auth, readOnly: s.readOnly, anonymous: compileGrants(s.anonymousRights) };
}

const BASIC_CHALLENGE = { "www-authenticate": 'Basic realm="artifact repository", charset="UTF-8"' };

/** 401, with a Basic challenge on artifact paths and a bare 401 on /api/ (no browser dialog). */
export function unauthenticated(target: Target, message: string): ServiceError {
  return new ServiceError("unauthenticated", message, target.kind === "artifact" ? { headers: BASIC_CHALLENGE } : {});
}

/**
 * Decides a request. `key` is null for a keyless caller. Throws the refusal (401/403) the
 * caller should see; returns normally when the request may go on.
 */
export function authorize(policy: AccessPolicy, target: Target, key: KeyRights | null, repositoryHeader: string | undefined, now: number): void {
  if (target.kind === "open") return;
  if (target.kind === "artifact" && target.write && policy.readOnly) {
    throw new ServiceError("forbidden", "this server is read-only (svc.read-only): writes are refused");
  }
  if (!policy.auth) return;

  const grants = key ? key.grants : undefined;
  let held = 0;
  let need: number;
  let what: string;

  if (target.kind === "artifact") {
    let scopeRepo = "*";
    if (repositoryHeader !== undefined) {
      if (!isRepositoryName(repositoryHeader)) throw invalid("Service-Repository-Name", "Service-Repository-Name is not a valid repository name");
      if (repositoryHeader !== target.repository) {
        throw new ServiceError(
          "forbidden",
          `Service-Repository-Name names repository "${repositoryHeader}" but this request is for repository "${target.repository}"`,
        );
      }
      scopeRepo = repositoryHeader;
    }
    need = target.write ? Right.repositoryWrite : Right.repositoryRead;
    what = `${target.write ? "repository:write" : "repository:read"} on ${scopeRepo === "*" ? "* (no Service-Repository-Name header was sent)" : scopeRepo}`;
    held = rightsFor(policy.anonymous, scopeRepo, target.path, now);
    if (grants) held |= rightsFor(grants, scopeRepo, target.path, now);
  } else if (target.capabilities) {
    need = Right.repositoryRead | Right.manageRead;
    what = "a read right";
    held = anyRights(policy.anonymous, now);
    if (grants) held |= anyRights(grants, now);
    if ((held & need) !== 0) return;
    held = 0;
  } else {
    need = target.write ? Right.manageWrite : Right.manageRead;
    what = `${target.write ? "manage:write" : "manage:read"} on *`;
    held = deploymentRights(policy.anonymous, now);
    if (grants) held |= deploymentRights(grants, now);
  }

  if ((held & need) === need) return;
  if (!key) throw unauthenticated(target, "a key is required: send it in Service-Repository-Key, as a Bearer token, or as the Basic password");
  throw new ServiceError("forbidden", `this key does not hold ${what}`);
}

/** Checks the key itself: tenant, revocation, expiry. */
export function checkKey(target: Target, key: KeyRights | null, tenant: string, now: number): asserts key is KeyRights {
  if (!key) throw unauthenticated(target, "unknown key");
  if (key.tenant !== tenant) throw unauthenticated(target, "this key belongs to another tenant");
  if (key.revoked) throw unauthenticated(target, "this key has been revoked");
  if (!(key.expiresAt > now)) throw unauthenticated(target, "this key has expired");
}

export { ALL_RIGHTS };
