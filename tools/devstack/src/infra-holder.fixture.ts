// A stand-in for `npm start` in infra.test.ts: starts the servers as the suite does (own process
// groups, supervised), prints their pids as one JSON line once ready, and on SIGINT or SIGTERM
// stops them and exits. Run as `tsx infra-holder.fixture.ts <dataDir>` to reproduce tsx's relay;
// `tsx infra-holder.fixture.ts <dataDir> services` also starts a service as an end-to-end test file
// does (startServices, not supervised, not detached), its pid printed beside the servers'.
import { join } from "node:path";
import { createDatabase, startInfra } from "./index.js";
import { startServices } from "./service-runner.js";

const infra = await startInfra({ dataDir: process.argv[2] ?? "", log: () => {}, env: {}, detached: true, supervise: true });
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  void infra.stop().then(() => process.exit(0));
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
const dataDir = process.argv[2] ?? "";
const services =
  process.argv[3] === "services"
    ? await startServices({ databaseUrl: await createDatabase(infra.adminDatabaseUrl, "svc_holder"), redisUrl: infra.redisUrl, natsUrl: infra.natsUrl, dataDir: join(dataDir, "services"), services: ["notifier"] })
    : undefined;
process.stdout.write(`${JSON.stringify({ ...infra.pids(), ...(services ? { notifier: services.pid("notifier") } : {}) })}\n`);
