// `npm run bench [-- --profile]`: how much of the artifacts service's own speed the gateway keeps.
//
// Starts Postgres/Redis/NATS under <repo>/.data/bench and every service (tools/devstack), stores
// a 1 KiB and a 256 MiB file through the gateway with the bootstrap key, then measures GETs of them
//   (a) through the gateway, with Service-Repository-Key,
//   (b) straight to the artifacts service, with the gateway's signed identity headers,
//   (c) through nginx in front of the artifacts service (when nginx is installed),
// and prints the figures. Nothing is asserted. See bench/README.md.
// `--scale` runs bench/scale.ts instead: the same suite at two sizes of data; `--npm` runs
// bench/npm-bench.ts: an npm repository side by side with Verdaccio.
import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "@svc/devstack";
import type { ServiceName } from "@svc/devstack/service-runner";
import { identityHeaders } from "@svc/kit";
import { parseKey } from "@svc/keys";
import { collectProfile } from "./cpuprofile.js";
import { check, closeDispatcher, largeBody, put } from "./bench-files.js";
import { startBenchSuite, startTcpGateway } from "./bench-suite.js";
import { largeOnce, measureLarge, startDownloader, type LargeResult, type LargeTarget } from "./large-files.js";
import { findNginx, startNginx, type RunningNginx } from "./nginx.js";
import { AGAINST, OCI, PROXY, S3, dataDir, LARGE, LARGE_PATH, LARGE_SIZE, log, NGINX, NPM, nginxDir, PROFILE, PROFILE_SERVICE, profileDir, RATE_LIMIT, ROUNDS, SCALE, SMALL, SMALL_PATH, SMALL_SIZE, suiteDir } from "./options.js";
import type { Procs } from "./procstat.js";
import { printReport } from "./report.js";
import { runAgainst } from "./against.js";
import { runNpm } from "./npm-bench.js";
import { runOci } from "./oci-bench.js";
import { runProxy } from "./npm-proxy-bench.js";
import { runS3 } from "./s3.js";
import { runScale } from "./scale.js";
import { smallRound, summariseSmall, type SmallRound } from "./small-files.js";

const onSignal = (sig: NodeJS.Signals) => {
  log(`${sig}: stopping (exit hooks kill the services, nginx and the servers)`);
  process.exit(130);
};

/** `--scale` (bench/scale.ts) or `--npm` (bench/npm-bench.ts), instead of the gateway's throughput. */
async function withSignals(run: () => Promise<void>): Promise<void> {
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  await run();
}

async function main(): Promise<void> {
  const cleanups: Array<() => Promise<unknown>> = [];
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  let nginx: RunningNginx | undefined;
  const nginxBin = NGINX ? findNginx() : undefined;

  try {
    rmSync(suiteDir, { recursive: true, force: true });
    rmSync(nginxDir, { recursive: true, force: true });
    rmSync(profileDir, { recursive: true, force: true });
    mkdirSync(dataDir, { recursive: true });

    // Read by startServices at every launch: the gateway is relaunched with --cpu-prof for the
    // small-file runs only (--profile).
    const nodeArgs: Partial<Record<ServiceName, string[]>> = {};
    const s = (await startBenchSuite(cleanups, nodeArgs)).suite;

    const parsed = parseKey(s.bootstrapKey);
    if (!parsed.ok) throw new Error(`the bootstrap key does not parse: ${parsed.problem}`);
    const principal = `key:${s.tenant}:${parsed.key.id}`;
    const signed = (path: string) => () => identityHeaders(s.internalSecret, "GET", path, principal);
    const keyHeaders = () => ({ "service-repository-key": s.bootstrapKey });

    log("storing a 1 KiB and a 256 MiB file through the gateway");
    await put(s.gatewayUrl + SMALL_PATH, s.bootstrapKey, randomBytes(SMALL_SIZE), SMALL_SIZE);
    if (LARGE) {
      const t0 = performance.now();
      await put(s.gatewayUrl + LARGE_PATH, s.bootstrapKey, largeBody(), LARGE_SIZE);
      log(`  256 MiB stored in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }
    await check("gateway", s.gatewayUrl + SMALL_PATH, keyHeaders(), SMALL_SIZE);
    await check("direct", s.urls.artifacts + SMALL_PATH, signed(SMALL_PATH)(), SMALL_SIZE);

    const procs = (): Procs => ({ gateway: s.pid("gateway"), artifacts: s.pid("artifacts"), ...(nginx ? { nginx: nginx.pid } : {}) });

    const nginxPort = await freePort();
    // nginx carries the signatures in its configuration: it is started afresh (fresh signatures)
    // for each use, and each use is kept well under the signatures' 60 s.
    const withNginx = async <T>(fn: (url: string) => Promise<T>): Promise<T | undefined> => {
      if (!nginxBin) return undefined;
      nginx = await startNginx(nginxBin, nginxDir, nginxPort, s.urls.artifacts, [
        { path: SMALL_PATH, headers: signed(SMALL_PATH)() },
        { path: LARGE_PATH, headers: signed(LARGE_PATH)() },
      ]);
      try {
        return await fn(nginx.url);
      } finally {
        await nginx.stop();
        nginx = undefined;
      }
    };
    if (nginxBin) await withNginx((url) => check("nginx", url + SMALL_PATH, {}, SMALL_SIZE));

    if (PROFILE) {
      log(`restarting the ${PROFILE_SERVICE} service under --cpu-prof for the small-file runs`);
      mkdirSync(profileDir, { recursive: true });
      nodeArgs[PROFILE_SERVICE!] = ["--cpu-prof", `--cpu-prof-dir=${profileDir}`];
      await s.stopService(PROFILE_SERVICE!, "SIGTERM");
      await s.startService(PROFILE_SERVICE!);
    }

    // The cost of the rate limit, in the same run: a second gateway node in front of the same
    // upstreams with the limit off (svc.rate-limit=0), taking turns with the limited one.
    const unlimited = SMALL && RATE_LIMIT !== 0 ? await s.startGateway({ SVC_RATE_LIMIT: "0" }) : undefined;
    if (unlimited) cleanups.push(() => unlimited.stop());
    if (unlimited) await check("gateway, no limit", unlimited.url + SMALL_PATH, keyHeaders(), SMALL_SIZE);

    // ---- small files: each round runs gateway, (gateway without the limit,) direct, nginx in turn
    const smallRounds: Record<string, SmallRound[]> = { gateway: [], "gateway, no limit": [], direct: [], nginx: [] };
    for (let round = 0; SMALL && round < ROUNDS; round++) {
      smallRounds.gateway!.push(await smallRound("gateway", round, s.gatewayUrl, keyHeaders(), procs()));
      if (unlimited) smallRounds["gateway, no limit"]!.push(await smallRound("gateway, no limit", round, unlimited.url, keyHeaders(), { ...procs(), gateway: unlimited.pid }));
      smallRounds.direct!.push(await smallRound("direct", round, s.urls.artifacts, signed(SMALL_PATH), procs()));
      const n = await withNginx((url) => smallRound("nginx", round, url, {}, procs()));
      if (n) smallRounds.nginx!.push(n);
    }
    const small = Object.entries(smallRounds)
      .filter(([, r]) => r.length > 0)
      .map(([label, r]) => summariseSmall(label, r));

    let profileFile: string | undefined;
    if (PROFILE) {
      log(`stopping the profiled ${PROFILE_SERVICE} service so it writes its profile, then starting it again without --cpu-prof`);
      profileFile = await collectProfile(s, PROFILE_SERVICE!, nodeArgs, profileDir);
    }

    // ---- large files: a warm-up download each, then rounds of gateway, direct, nginx in turn
    let large: LargeResult[] = [];
    if (LARGE) {
      const client = startDownloader();
      cleanups.push(() => client.stop());
      // The socket's gain, in the same run: a gateway node over loopback TCP taking turns with it.
      const tcp = await startTcpGateway(s, cleanups);
      const targets: LargeTarget[] = [
        { label: "gateway", run: (p) => largeOnce(client, s.gatewayUrl, keyHeaders, p) },
        ...(tcp ? [{ label: "gateway, TCP", run: (p: Procs) => largeOnce(client, tcp.url, keyHeaders, { ...p, gateway: tcp.pid }) }] : []),
        { label: "direct", run: (p) => largeOnce(client, s.urls.artifacts, signed(LARGE_PATH), p) },
        ...(nginxBin ? [{ label: "nginx", run: (_p: Procs) => withNginx((url) => largeOnce(client, url, () => ({}), procs())) }] : []),
      ];
      large = await measureLarge(targets, procs);
    }

    printReport({ small, large, nginxBin, profileFile });
  } finally {
    if (nginx) await nginx.stop().catch(() => {});
    for (const c of cleanups.reverse()) await c().catch((err) => log(`cleanup: ${(err as Error).message}`));
    await closeDispatcher().catch(() => {});
    rmSync(suiteDir, { recursive: true, force: true });
    process.removeListener("SIGINT", onSignal);
    process.removeListener("SIGTERM", onSignal);
  }
}

(SCALE ? withSignals(runScale) : NPM ? withSignals(runNpm) : PROXY ? withSignals(runProxy) : OCI ? withSignals(runOci) : AGAINST ? withSignals(runAgainst) : S3 ? withSignals(runS3) : main()).then(
  () => process.exit(0),
  (err: unknown) => {
    log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
