import type { Logger } from "pino";
import type { GatewayConfig } from "../config.js";

/** The start-up warnings for settings that open the gateway up or switch a protection off. */
export function warnAboutSettings(config: Pick<GatewayConfig, "auth" | "anonymousRights" | "readOnly" | "redisUrl" | "repositoryScopeFromPath">, log: Logger): void {
  if (!config.auth) {
    log.warn("svc.auth=false: every request is served anonymously; anyone who can reach this port can read, publish and delete (advisory svc.auth.open)");
  } else if (config.anonymousRights.some((g) => g.tokens.some((t) => t === "*" || t.endsWith(":write") || t.endsWith(":*")))) {
    log.warn({ anonymousRights: config.anonymousRights }, "svc.anonymous-rights lets a keyless caller write or administer");
  }
  if (config.auth && config.repositoryScopeFromPath) {
    log.warn("svc.repository-scope-from-path is on: an artifact request without Service-Repository-Name is authorised against the repository its path names (advisory svc.repository-scope.from-path)");
  }
  if (config.readOnly) log.warn("svc.read-only is on: every artifact write is refused with 403");
  if (!config.redisUrl) log.warn("svc.redis-url is not set: requests are served without a rate limit");
}
