import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { apiReport, createBaseApp, type Check } from "@svc/kit";
import { capabilityRoutes, type Capabilities } from "./routes/capability-routes.js";
import { openapiRoutes } from "./routes/openapi-routes.js";
import { operationsRoutes, type OperationsDeps } from "./routes/operation-routes.js";

export interface AdminDeps {
  log: Logger;
  internalSecret: string;
  capabilities: Capabilities;
  operations: OperationsDeps;
  checks: Check[];
}


export function buildApp(deps: AdminDeps): FastifyInstance {
  const app = createBaseApp({ log: deps.log, internalSecret: deps.internalSecret, checks: deps.checks, metrics: deps.operations.metrics });
  capabilityRoutes(app, deps.capabilities);
  operationsRoutes(app, deps.operations);
  const { bus, control, metrics } = deps.operations;
  openapiRoutes(app, { bus, control, own: () => apiReport(metrics) });
  return app;
}
