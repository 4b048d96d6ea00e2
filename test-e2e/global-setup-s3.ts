import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { startObjectStore, type ObjectStore } from "@svc/devstack";

declare module "vitest" {
  export interface ProvidedContext {
    /** The run's RADOS Gateway (the e2e-s3 project only): each suite makes a bucket of its own on it. */
    s3: { endpoint: string; region: string; accessKey: string; secretKey: string };
  }
}

let store: ObjectStore | undefined;

/**
 * One Ceph RADOS Gateway for the whole S3 pass (vitest.config.ts, project e2e-s3), started after
 * test-e2e/global-setup.ts made the run's data folder. Vitest runs a project's global setup only
 * when the run has files of that project, so a run of other files never starts it.
 */
export default async function setup(project: TestProject) {
  const dataDir = join(project.getProvidedContext().dataDir, "object-store");
  mkdirSync(dataDir, { recursive: true });
  store = await startObjectStore({ dataDir, log: (l) => console.error(l) });
  project.provide("s3", { endpoint: store.endpoint, region: store.region, accessKey: store.accessKey, secretKey: store.secretKey });
  // Its data folder goes with the run's (global-setup.ts), which is torn down after this one.
  return async () => {
    await store?.stop();
  };
}
