import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { createBaseApp, type Check, type ServiceMetrics } from "@svc/kit";
import type { FileStore } from "./domain/file-store.js";
import type { MetadataStore } from "./store/metadata-store.js";
import { rawRoutes } from "./routes/raw-routes.js";

export interface ArtifactsDeps {
  log: Logger;
  internalSecret: string;
  files: FileStore;
  metadata: MetadataStore;
  repositories: () => ReadonlySet<string>;
  checks: Check[];
  metrics?: ServiceMetrics;
}

export function buildApp(deps: ArtifactsDeps): FastifyInstance {
  const app = createBaseApp({ log: deps.log, internalSecret: deps.internalSecret, checks: deps.checks, metrics: deps.metrics, fastify: { keepAliveTimeout: 65_000 } });
  rawRoutes(app, deps);
  return app;
}
