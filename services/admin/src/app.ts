import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { apiReport, createBaseApp, type Check, type SettingsReply } from "@svc/kit";
import type { NodeControl } from "./messaging/node-control.js";
import { capabilityRoutes, type Capabilities } from "./routes/capability-routes.js";
import { openapiRoutes } from "./routes/openapi-routes.js";
import { operationsRoutes, type OperationsDeps } from "./routes/operation-routes.js";
import { settingsRoutes } from "./routes/settings-routes.js";
import { homeRoutes, type HomeRoutesDeps } from "./routes/home-routes.js";
import { auditRoutes } from "./routes/audit-routes.js";
import type { AuditStore } from "./store/audit-store.js";
import type { LiveSettings } from "./domain/live-settings.js";
import type { RuntimeSettingStore } from "./store/runtime-setting-store.js";

export interface AdminDeps {
  log: Logger;
  internalSecret: string;
  internalSecretPrevious?: string;
  capabilities: Capabilities;
  operations: Omit<OperationsDeps, "peers" | "live">;
  /** The run-time settings (stored values over the ones read at start) and their store. */
  live: LiveSettings;
  runtimeSettings: Pick<RuntimeSettingStore, "changes" | "load">;
  /** What admin asks of, and tells, the other nodes. */
  peers: NodeControl;
  checks: Check[];
  /** This process's own settings report (kit's answerSettings). */
  ownSettings: () => SettingsReply;
  /** The sampled meters, the recent publishes and the nodes, for the console's home page. */
  home: Omit<HomeRoutesDeps, "nodes">;
  /** The audit trail (GET /api/audit). */
  audit: Pick<AuditStore, "search">;
}

export function buildApp(deps: AdminDeps): FastifyInstance {
  const app = createBaseApp({ log: deps.log, internalSecret: deps.internalSecret, internalSecretPrevious: deps.internalSecretPrevious, checks: deps.checks, metrics: deps.operations.metrics });
  capabilityRoutes(app, deps.capabilities);
  operationsRoutes(app, { ...deps.operations, peers: deps.peers, live: deps.live });
  settingsRoutes(app, { peers: deps.peers, own: deps.ownSettings, live: deps.live, store: deps.runtimeSettings });
  homeRoutes(app, { ...deps.home, nodes: deps.operations.nodes });
  auditRoutes(app, { store: deps.audit });
  openapiRoutes(app, { peers: deps.peers, own: () => apiReport(deps.operations.metrics) });
  return app;
}
