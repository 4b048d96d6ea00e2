import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type { TestProject } from "vitest/node";
import { startInfra, type Infra } from "@svc/infra";

declare module "vitest" {
  export interface ProvidedContext {
    adminDatabaseUrl: string;
    redisUrl: string;
    natsUrl: string;
    dataDir: string;
  }
}

let infra: Infra | undefined;

/** One Postgres, Redis and NATS for the whole run, on free ports under .data/test-<pid>. */
export default async function setup(project: TestProject) {
  const dataDir = resolve(import.meta.dirname, "..", ".data", `test-${process.pid}`);
  mkdirSync(dataDir, { recursive: true });
  infra = await startInfra({ dataDir: join(dataDir, "infra"), log: () => {} });
  project.provide("adminDatabaseUrl", infra.adminDatabaseUrl);
  project.provide("redisUrl", infra.redisUrl);
  project.provide("natsUrl", infra.natsUrl);
  project.provide("dataDir", dataDir);
  return async () => {
    await infra?.stop();
  };
}
