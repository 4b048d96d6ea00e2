// A stand-in for `npm start` in infra.test.ts: starts the servers as the suite does (own process
// groups, supervised), prints their pids as one JSON line once ready, and on SIGINT or SIGTERM
// stops them and exits. Run as `tsx infra-holder.fixture.ts <dataDir>` to reproduce tsx's relay.
import { startInfra } from "./index.js";

const infra = await startInfra({ dataDir: process.argv[2] ?? "", log: () => {}, env: {}, detached: true, supervise: true });
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  void infra.stop().then(() => process.exit(0));
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
process.stdout.write(`${JSON.stringify(infra.pids())}\n`);
