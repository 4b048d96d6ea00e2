import pino from "pino";
import { compileGrants } from "@svc/grants";
import { makeKey, parseKey } from "@svc/keys";
import { addressMatcher } from "@svc/kit";
import { buildApp } from "../app.js";
import { accessPolicy } from "../domain/admission.js";
import { rightsCacheFactory, type KeyRights } from "../domain/rights-cache.js";

/** Tests only: a gateway forwarding every route to `upstreamUrl`, and a key it knows holding every right. */
export function testGateway(upstreamUrl: string, internalSecret: string, opts: { upstreamSilenceMs?: number } = {}) {
  const key = makeKey("default");
  const keyId = (parseKey(key) as { ok: true; key: { id: string } }).key.id;
  const rights: KeyRights = { id: keyId, tenant: "default", revoked: false, expiresAt: Infinity, allowedFrom: null, grants: compileGrants([{ scope: "*", tokens: ["*"], expires: null }]) };
  const app = buildApp({
    log: pino({ level: "silent" }),
    tenant: "default",
    internalSecret,
    policy: accessPolicy({ auth: true, readOnly: false, anonymousRights: [] }),
    cache: rightsCacheFactory({ ttlMs: 60_000, lookup: async (id) => (id === keyId ? rights : null) }),
    upstreams: { auth: upstreamUrl, artifacts: upstreamUrl, admin: upstreamUrl, walker: upstreamUrl, notifier: upstreamUrl, console: upstreamUrl },
    checks: [],
    trustedProxies: addressMatcher([]),
    ...opts,
  });
  return { app, key, keyId };
}
