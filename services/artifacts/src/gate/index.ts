import type { FastifyBaseLogger } from "fastify";
import type pg from "pg";
import type { ArtifactsConfig } from "../config.js";
import type { ArtifactService } from "../domain/artifact-service.js";
import type { Formats } from "../formats/format.js";
import type { MetadataStore } from "../store/metadata-store.js";
import { advisoryAuditFactory } from "./audit.js";
import { advisoryRefreshFactory } from "./advisory-refresh.js";
import { cooldownFactory } from "./cooldown.js";
import { cooldownStoreFactory } from "./cooldown-store.js";
import type { GateSettings } from "./gate.js";
import { gateServiceFactory } from "./gate-service.js";
import { gateStoreFactory } from "./gate-store.js";
import type { GateRoutesDeps } from "./gate-routes.js";

/** How often a node reads the advisory sources' state for its heartbeat. */
const STATE_POLL_MS = 5_000;

type GateConfig = Pick<ArtifactsConfig, "malwareAction" | "vulnerabilityAction" | "vulnerabilityThreshold" | "denyListAction" | "gateMinAge" | "advisoriesSources" | "advisoriesRefreshMs" | "readOnly">;

/**
 * The gate's settings as the process has them. The one place they are read: a run-time settings
 * follower (PUT /api/settings/<name>) replaces this function, and the next check reads its values.
 */
export const gateSettingsOf = (config: GateConfig) => (): GateSettings => ({
  malwareAction: config.malwareAction,
  vulnerabilityAction: config.vulnerabilityAction,
  vulnerabilityThreshold: config.vulnerabilityThreshold,
  denyListAction: config.denyListAction,
});

/**
 * The screening gate wired (docs/administration/screening.md): its store, service, publish hooks,
 * advisory refresh and routes. `attach` hands it the artifact service once that is built (the
 * artifact service is built with the gate's publish hooks).
 */
export function wireGate(deps: {
  config: GateConfig;
  pool: pg.Pool;
  metadata: MetadataStore;
  formats: Pick<Formats, "ecosystemOf" | "hooks">;
  log: FastifyBaseLogger;
  settings?: () => GateSettings;
  /** svc.gate.min-age as it is now (run-time); default the value read at start. */
  minAge?: () => string;
  replica?: boolean;
}) {
  const store = gateStoreFactory(deps.pool);
  let artifacts: ArtifactService | undefined;
  const service = gateServiceFactory({
    pool: deps.pool,
    store,
    metadata: deps.metadata,
    artifacts: () => {
      if (!artifacts) throw new Error("the gate is used before the artifact service is attached");
      return artifacts;
    },
    settings: deps.settings ?? gateSettingsOf(deps.config),
    ecosystemOf: deps.formats.ecosystemOf,
    coordinates: deps.formats.hooks.coordinates,
    log: deps.log,
  });
  // The cooldown: proxied versions younger than svc.gate.min-age are neither fetched nor listed (ProxyDeps.tooYoung).
  const cooldown = cooldownFactory({ store: cooldownStoreFactory(deps.pool), refusals: store, log: deps.log, minAge: deps.minAge ?? (() => deps.config.gateMinAge), ecosystemOf: deps.formats.ecosystemOf });
  const refresh = advisoryRefreshFactory({
    pool: deps.pool,
    store,
    sources: deps.config.advisoriesSources,
    refreshMs: deps.config.advisoriesRefreshMs,
    log: deps.log,
    changed: async (advisories) => {
      await service.recheck(advisories);
    },
  });
  // What this node's heartbeat says of the advisory data (the posture's svc.advisories.unreadable):
  // read from Postgres every few seconds, since another node may be the one that loaded it.
  let unreadable = false;
  const poll = async () => {
    const states = await store.sources().catch(() => undefined);
    if (states) unreadable = states.some((st) => st.error !== null && deps.config.advisoriesSources.includes(st.source));
  };
  let polling: NodeJS.Timeout | undefined;
  const routes: GateRoutesDeps = { gate: service, store, sources: deps.config.advisoriesSources, refreshMs: deps.config.advisoriesRefreshMs, cooldown };
  return {
    publishGate: service.publishGate,
    screenVersions: service.screenVersions,
    tooYoung: cooldown.tooYoung,
    /** Clients' audits (`npm audit`) read the same advisory data. */
    audit: advisoryAuditFactory(store),
    /** A request for a young version's file refused: kept in the refusal log (routes/raw-routes.ts). */
    cooldownRefused: cooldown.refused,
    routes,
    attach(a: ArtifactService) {
      artifacts = a;
    },
    /** Loads advisory data now and on its schedule; a read-only node (or one on a replica) writes none. */
    start() {
      if (!deps.config.readOnly && !deps.replica) {
        refresh.start();
        void service.checkUncheckedDenyEntries().catch((err: unknown) => deps.log.error({ err }, "could not read the deny list entries left unchecked"));
      }
      if (deps.config.advisoriesSources.length > 0) {
        polling = setInterval(() => void poll(), STATE_POLL_MS);
        polling.unref();
      }
    },
    /** For the heartbeat: `advisories: unreadable` while a configured source's last read failed. */
    status: (): Record<string, string> => (unreadable ? { advisories: "unreadable" } : {}),
    async stop() {
      if (polling) clearInterval(polling);
      await refresh.stop();
    },
  };
}
