// The servers and services a bench run measures: our own Postgres, Redis and NATS under
// <repo>/.data/bench/infra (tools/devstack), a fresh database, every service as its own process.
import { join } from "node:path";
import { createDatabase, startInfra, type Infra } from "@svc/devstack";
import { ensureServiceBundles } from "@svc/devstack/service-bundle";
import { SERVICE_NAMES, startServices, type Replica, type RunningServices, type ServiceName } from "@svc/devstack/service-runner";
import { dataDir, log, RATE_LIMIT, SOCKETS, suiteDir } from "./options.js";

export interface BenchSuite {
  infra: Infra;
  suite: RunningServices;
  /** The suite's database (the scale run fills its tables directly). */
  databaseUrl: string;
}

/**
 * Starts the servers and the services; each stop is pushed onto `cleanups` as soon as there is
 * something to stop, so a failure half-way still stops what was started. `nodeArgs` is read by
 * startServices at every launch (the small-file runs relaunch the gateway with --cpu-prof);
 * `env` adds settings (SVC_…) to every service.
 */
export async function startBenchSuite(cleanups: Array<() => Promise<unknown>>, nodeArgs: Partial<Record<ServiceName, string[]>> = {}, env: Record<string, string> = {}): Promise<BenchSuite> {
  log(`starting Postgres, Redis and NATS under ${join(dataDir, "infra")}`);
  await ensureServiceBundles(SERVICE_NAMES);
  const infra = await startInfra({ dataDir: join(dataDir, "infra"), log: (l) => log(l) });
  cleanups.push(() => infra.stop());
  const databaseUrl = await createDatabase(infra.adminDatabaseUrl, "svc_bench");
  log("starting the services");
  const suite = await startServices({
    databaseUrl,
    redisUrl: infra.redisUrl,
    natsUrl: infra.natsUrl,
    dataDir: suiteDir,
    nodeArgs,
    // The gateway reaches its upstreams over Unix sockets, as `npm start` runs them (--tcp: loopback TCP).
    sockets: SOCKETS,
    env: { SVC_RATE_LIMIT: String(RATE_LIMIT), ...env },
  });
  cleanups.push(() => suite.stop());
  return { infra, suite, databaseUrl };
}

/**
 * With sockets: a second gateway node reaching the same upstreams over loopback TCP, the hop
 * the socket replaces, measured beside it in the same run (undefined with --tcp).
 */
export async function startTcpGateway(suite: RunningServices, cleanups: Array<() => Promise<unknown>>): Promise<Replica | undefined> {
  if (!suite.socketUrls) return undefined;
  const env = Object.fromEntries(Object.keys(suite.socketUrls).map((name) => [`SVC_${name.toUpperCase()}_URL`, suite.urls[name as ServiceName]]));
  const gateway = await suite.startGateway({ SVC_RATE_LIMIT: String(RATE_LIMIT), ...env });
  cleanups.push(() => gateway.stop());
  return gateway;
}
