import { mkdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import type { TestProject } from "vitest/node";
import { ensureChromium, startInfra, type Infra } from "@svc/devstack";
import { ensurePrometheus } from "@svc/devstack/prometheus";
import { ensureServiceBundles } from "@svc/devstack/service-bundle";
import { SERVICE_NAMES } from "@svc/devstack/service-runner";
import { makeTemplateDatabase } from "./template-database.js";

declare module "vitest" {
  export interface ProvidedContext {
    adminDatabaseUrl: string;
    redisUrl: string;
    natsUrl: string;
    dataDir: string;
    /** A Prometheus server binary, for the scrape test. */
    prometheus: string;
    /** Debian's Chromium, for the console's browser tests (installed from Debian when missing). */
    chromium: string;
    /** A database with every service's migrations applied, which each suite's database copies (template-database.ts). */
    templateDatabase: string;
  }
}

let infra: Infra | undefined;

/** One Postgres, Redis and NATS for the whole run, on free ports under .data/test-<pid>; a Prometheus binary. */
export default async function setup(project: TestProject) {
  // Every file starts its own suite: from bundles, each start costs about a second of CPU per service instead of four (service-bundle.ts).
  await ensureServiceBundles(SERVICE_NAMES);
  // Each e2e project (e2e, e2e-s3) has its own servers and folder: a run of both tears each down on its own.
  const dataDir = resolve(import.meta.dirname, "..", ".data", `test-${process.pid}${project.name === "e2e" ? "" : `-${project.name}`}`);
  mkdirSync(dataDir, { recursive: true });
  infra = await startInfra({ dataDir: join(dataDir, "infra"), log: () => {} });
  project.provide("adminDatabaseUrl", infra.adminDatabaseUrl);
  project.provide("redisUrl", infra.redisUrl);
  project.provide("natsUrl", infra.natsUrl);
  project.provide("dataDir", dataDir);
  project.provide("templateDatabase", await makeTemplateDatabase(infra.adminDatabaseUrl));
  // Unpacked once under .data/tools and kept for later runs (nothing is installed).
  project.provide("prometheus", await ensurePrometheus(resolve(import.meta.dirname, "..", ".data", "tools"), () => {}));
  project.provide("chromium", await ensureChromium((l) => console.error(l)));
  return async () => {
    await infra?.stop();
    // Each run's servers, stores and logs take several hundred MB: gone with the run, unless
    // kept on purpose to look into a failure.
    if (process.env.SVC_TEST_KEEP_DATA === "1") console.error(`test data kept in ${dataDir}`);
    else rmSync(dataDir, { recursive: true, force: true });
  };
}
