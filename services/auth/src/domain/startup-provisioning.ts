import type { Logger } from "pino";
import type { CredentialService } from "./credential-service.js";
import type { PrincipalService } from "./principal-service.js";

/** How long start-up waits for NATS before it makes changes other gateways should hear of. */
const ANNOUNCE_WAIT_MS = 10_000;

export interface StartupProvisioningDeps {
  settings: { bootstrapKey: string | undefined; uiAdmins: string[]; profile: string };
  credentials: Pick<CredentialService, "provisionBootstrap">;
  principals: Pick<PrincipalService, "seedAdministrators" | "grantPerson">;
  /** Resolves true once changes can be announced, false after `timeoutMs`. */
  announcerReady: (timeoutMs: number) => Promise<boolean>;
  log: Pick<Logger, "info" | "warn">;
}

/** The dev profile's console accounts and their rights on `*`: administration, and reading (manage:read included). */
export const DEV_ACCOUNT_GRANTS = [
  ["dev/admin", ["admin"]],
  ["dev/viewer", ["read-only", "manage:read"]],
] as const;

/**
 * svc.ui.admins and svc.bootstrap-key, applied on every start. The changes are announced like
 * any other, so NATS gets a moment to connect first: other gateways may hold the key in their
 * caches. Bounded: without NATS the changes still apply, and their announcements wait in the
 * outbox until NATS is back (svc.cache.ttl bounds how long others lag meanwhile).
 */
export async function provisionAtStartup(deps: StartupProvisioningDeps): Promise<void> {
  const { settings, log } = deps;
  if (settings.bootstrapKey || settings.uiAdmins.length > 0 || settings.profile === "dev") {
    if (!(await deps.announcerReady(ANNOUNCE_WAIT_MS))) log.warn("NATS is not reachable: start-up credential changes are announced to other gateways once it is");
  }
  if (settings.uiAdmins.length > 0) {
    await deps.principals.seedAdministrators(settings.uiAdmins);
    log.info({ admins: settings.uiAdmins }, "seeded deployment-wide administration for svc.ui.admins");
  }
  if (settings.profile === "dev") {
    // The console's two built-in dev accounts (svc.profile=dev runs on loopback only), one per role.
    for (const [id, tokens] of DEV_ACCOUNT_GRANTS) await deps.principals.grantPerson({ id, scope: "*", tokens: [...tokens], expires: null });
    log.warn({ people: DEV_ACCOUNT_GRANTS.map(([id]) => id) }, "SECURITY svc.profile=dev: granted the console's built-in dev accounts their rights");
  }
  if (settings.bootstrapKey) {
    const id = await deps.credentials.provisionBootstrap(settings.bootstrapKey);
    log.warn(
      { credentialId: id },
      "SECURITY svc.bootstrap-key is set: it holds every right on every repository and never expires. Issue real keys with it, then unset svc.bootstrap-key and restart; its entry stays until revoked.",
    );
  }
}
