// `npm run bench -- --s3`: the S3-compatible blob store beside the filesystem one, in one run.
//
// Starts a Ceph RADOS Gateway of its own (tools/devstack/src/object-store.ts) under
// <repo>/.data/bench/objectstore, one suite on it (svc.storage=s3) and one on the filesystem,
// both on the bench's Postgres, Redis and NATS (the filesystem suite as another tenant, so the
// two never hear each other's events), and measures side by side:
//   - 1 KiB GETs per second through each suite's gateway, rounds taken in turns;
//   - 256 MiB GETs through the S3 suite's gateway against a GET of the same blob straight from
//     the object store (a pre-signed URL), downloads taken in turns;
//   - small publishes (1 KiB PUTs through the gateway, a few in flight), one suite after the other
//     in turns of 100.
// Nothing is asserted. See bench/README.md ("S3").
import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { createDatabase, startObjectStore } from "@svc/devstack";
import { startServices, type RunningServices } from "@svc/devstack/service-runner";
import { largeBody, put } from "./bench-files.js";
import { startBenchSuite } from "./bench-suite.js";
import { measureLarge, startDownloader, type LargeRun } from "./large-files.js";
import { CONNECTIONS, dataDir, LARGE_PATH, LARGE_RUNS, LARGE_SIZE, log, RATE_LIMIT, ROUNDS, S3_PUBLISHES, SMALL_PATH, SMALL_SIZE, suiteDir } from "./options.js";
import { cpuDelta, snapshot, type Procs } from "./procstat.js";
import { smallRound, summariseSmall, type SmallRound } from "./small-files.js";

const BUCKET = "svc-bench";

export async function runS3(): Promise<void> {
  const cleanups: Array<() => Promise<unknown>> = [];
  try {
    for (const d of [suiteDir, join(dataDir, "suite-fs"), join(dataDir, "objectstore")]) rmSync(d, { recursive: true, force: true });
    mkdirSync(dataDir, { recursive: true });
    log("starting a RADOS Gateway of the bench's own (Ceph's packages are installed when missing)");
    const store = await startObjectStore({ dataDir: join(dataDir, "objectstore"), log: (l) => log(l) });
    cleanups.push(() => store.stop());
    await store.createBucket(BUCKET);
    const { infra, suite: s3 } = await startBenchSuite(cleanups, {}, {
      SVC_STORAGE: "s3",
      SVC_STORAGE_S3_BUCKET: BUCKET,
      SVC_STORAGE_S3_ENDPOINT: store.endpoint,
      SVC_STORAGE_S3_REGION: store.region,
      SVC_STORAGE_S3_PATH_STYLE: "true",
      SVC_STORAGE_S3_ACCESS_KEY: store.accessKey,
      SVC_STORAGE_S3_SECRET_KEY: store.secretKey,
    });
    log("starting the filesystem suite beside it");
    const fs = await startServices({
      databaseUrl: await createDatabase(infra.adminDatabaseUrl, "svc_bench_fs"),
      redisUrl: infra.redisUrl,
      natsUrl: infra.natsUrl,
      dataDir: join(dataDir, "suite-fs"),
      env: { SVC_RATE_LIMIT: String(RATE_LIMIT), SVC_TENANT: "fsbench" },
    });
    cleanups.push(() => fs.stop());
    const suites: Array<{ label: string; s: RunningServices }> = [
      { label: "filesystem", s: fs },
      { label: "s3", s: s3 },
    ];
    const key = (s: RunningServices) => ({ "service-repository-key": s.bootstrapKey });
    const procs = (s: RunningServices): Procs => ({ gateway: s.pid("gateway"), artifacts: s.pid("artifacts") });

    // ---- 1 KiB GETs: the suites take turns, round after round
    for (const { s } of suites) await put(s.gatewayUrl + SMALL_PATH, s.bootstrapKey, randomBytes(SMALL_SIZE), SMALL_SIZE);
    const small = new Map<string, SmallRound[]>(suites.map((x) => [x.label, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const { label, s } of suites) small.get(label)!.push(await smallRound(`gateway, ${label}`, round, s.gatewayUrl, key(s), procs(s)));
    }

    // ---- 256 MiB: through the S3 suite's gateway, and straight from the object store
    log("large: storing 256 MiB in the S3 suite");
    await put(s3.gatewayUrl + LARGE_PATH, s3.bootstrapKey, largeBody(), LARGE_SIZE);
    const head = await fetch(s3.gatewayUrl + LARGE_PATH, { method: "HEAD", headers: key(s3) });
    const sha256 = (head.headers.get("etag") ?? "").replaceAll('"', "");
    const client = new S3Client({ endpoint: store.endpoint, region: store.region, forcePathStyle: true, credentials: { accessKeyId: store.accessKey, secretAccessKey: store.secretKey } });
    cleanups.push(async () => client.destroy());
    const downloader = startDownloader();
    cleanups.push(() => downloader.stop());
    const timed = async (url: string, headers: Record<string, string>, p: Procs): Promise<LargeRun> => {
      const pp = { ...p, client: downloader.pid };
      const before = snapshot(pp);
      const t0 = performance.now();
      const mbps = await downloader.download(url, headers);
      return { mbps, seconds: (performance.now() - t0) / 1000, cpu: cpuDelta(before, snapshot(pp)) };
    };
    const large = await measureLarge(
      [
        { label: "gateway, s3", run: (p) => timed(s3.gatewayUrl + LARGE_PATH, key(s3), p) },
        // A URL signed for each download (valid 10 minutes), as a client the bucket serves would get one.
        { label: "object store", run: async (p) => timed(await getSignedUrl(client, new GetObjectCommand({ Bucket: BUCKET, Key: `blobs/sha256/${sha256.slice(0, 2)}/${sha256}` }), { expiresIn: 600 }), {}, p) },
      ],
      () => procs(s3),
    );

    // ---- small publishes: each suite in turn, 100 at a time, CONCURRENCY in flight
    const publishes = new Map(suites.map((x) => [x.label, { n: 0, ms: 0 }]));
    const inFlight = 8;
    for (let from = 0; from < S3_PUBLISHES; from += 100) {
      for (const { label, s } of from % 200 === 0 ? suites : [...suites].reverse()) {
        const batch = Array.from({ length: Math.min(100, S3_PUBLISHES - from) }, (_, i) => from + i);
        const t0 = performance.now();
        for (let i = 0; i < batch.length; i += inFlight) {
          await Promise.all(batch.slice(i, i + inFlight).map((n) => put(`${s.gatewayUrl}/repository/default/bench/publish-${n}.bin`, s.bootstrapKey, randomBytes(SMALL_SIZE), SMALL_SIZE)));
        }
        const acc = publishes.get(label)!;
        acc.ms += performance.now() - t0;
        acc.n += batch.length;
      }
    }

    // ---- the report
    const rows = suites.map(({ label }) => {
      const r = summariseSmall(label, small.get(label)!);
      return { label, rps: r.rps, p99: Math.max(...r.rounds.map((x) => x.p99)), gw: (r.cpu.gateway * 1000) / r.ok, art: (r.cpu.artifacts * 1000) / r.ok };
    });
    const fsSmall = rows[0]!;
    const s3Small = rows[1]!;
    console.log(`\nS3 beside the filesystem: one run, node ${process.version}; a RADOS Gateway (Ceph) on this machine, path-style, http on loopback.`);
    console.log(`\n1 KiB GET through the gateway, ${CONNECTIONS} connections, ${ROUNDS} round(s) per store taken in turns`);
    for (const r of rows) console.log(`  ${r.label.padEnd(10)}  ${r.rps.toFixed(0).padStart(6)} req/s  p99 ${r.p99.toFixed(0)} ms  CPU per request: gateway ${r.gw.toFixed(0)} µs, artifacts ${r.art.toFixed(0)} µs`);
    console.log(`  s3 / filesystem: x${(s3Small.rps / fsSmall.rps).toFixed(2)} req/s`);
    const viaGateway = large.find((l) => l.label === "gateway, s3");
    const direct = large.find((l) => l.label === "object store");
    console.log(`\n256 MiB GET, ${LARGE_RUNS} downloads per target taken in turns (MB = 10^6 bytes)`);
    for (const l of large) console.log(`  ${l.label.padEnd(14)}  ${l.mbps.toFixed(0).padStart(5)} MB/s  runs ${l.runs.map((x) => x.toFixed(0)).join(" / ")}`);
    if (viaGateway && direct) console.log(`  gateway from S3 / object store direct: ${((viaGateway.mbps / direct.mbps) * 100).toFixed(1)} %`);
    console.log(`\n${S3_PUBLISHES} publishes of 1 KiB through the gateway per store, ${inFlight} in flight, in turns of 100`);
    for (const { label } of suites) {
      const p = publishes.get(label)!;
      console.log(`  ${label.padEnd(10)}  ${((p.n * 1000) / p.ms).toFixed(0).padStart(5)} publishes/s  (${(p.ms / 1000).toFixed(1)} s)`);
    }
    const pf = publishes.get("filesystem")!;
    const ps = publishes.get("s3")!;
    console.log(`  s3 / filesystem: x${(ps.ms / ps.n / (pf.ms / pf.n)).toFixed(2)} time per publish`);
  } finally {
    for (const c of cleanups.reverse()) await c().catch((err) => log(`cleanup: ${(err as Error).message}`));
  }
}
