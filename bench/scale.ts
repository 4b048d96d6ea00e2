// `npm run bench -- --scale`: what grows with the data. One suite is grown through several
// sizes (`--sizes`, default 10k, 100k and 1M keys, files and group members), filled through
// internal paths (scale-fill.ts), and measured at each size; the figures of every size are
// printed side by side. Nothing is asserted. See bench/README.md ("Scale").
// With --s3 a second suite on a RADOS Gateway of the bench's own (svc.storage=s3) is grown
// beside it, and its uploads, GETs and walks (whose reclaim reads the bucket's listing) are
// printed under the filesystem's, with their ratio.
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { filesystemBlobStore, s3BlobStore } from "@svc/blobs";
import { createDatabase, startObjectStore } from "@svc/devstack";
import { startServices, type RunningServices } from "@svc/devstack/service-runner";
import { createBus, createLogger } from "@svc/kit";
import { startBenchSuite } from "./bench-suite.js";
import { dataDir, log, RATE_LIMIT, S3, SCALE_CONCURRENCY, SCALE_ROWS_PER_BLOB, SCALE_SAMPLE, SCALE_SIZES, suiteDir } from "./options.js";
import { apiClient, closeScaleAgent } from "./scale-client.js";
import { addMembers, bulkFill, mintKeys, newFillState, uploadFiles, type Filled } from "./scale-fill.js";
import {
  announcements,
  defineScaleWalk,
  fetchWithKey,
  measureGets,
  measureGroupChange,
  measureKeyChecks,
  measureListings,
  measureWalk,
  type GroupChange,
  type KeyChecks,
  type Listings,
  type Spread,
  type Walk,
} from "./scale-measure.js";

/** GETs of bulk-filled files timed at each size. */
const GETS = 1000;

interface SizeFigures {
  size: number;
  filled: Filled;
  mintPerSecond: number;
  uploadPerSecond: number;
  listings: Listings;
  keyChecks: KeyChecks;
  gets: Spread;
  walk: Walk;
  group: GroupChange;
  /** The S3 suite's figures at this size (--s3). */
  s3?: { filled: Filled; uploadPerSecond: number; gets: Spread; walk: Walk };
}

const S3_BUCKET = "svc-bench-scale";

/** The S3 suite of a --scale --s3 run: its own object store, database and tenant, on the bench's Postgres, Redis and NATS. */
async function startS3Suite(cleanups: Array<() => Promise<unknown>>, adminDatabaseUrl: string, redisUrl: string, natsUrl: string) {
  for (const d of [join(dataDir, "suite-s3"), join(dataDir, "objectstore")]) rmSync(d, { recursive: true, force: true });
  log("scale: starting a RADOS Gateway of the bench's own and a suite on it (svc.storage=s3)");
  const store = await startObjectStore({ dataDir: join(dataDir, "objectstore"), log: (l) => log(l) });
  cleanups.push(() => store.stop());
  await store.createBucket(S3_BUCKET);
  const settings = { bucket: S3_BUCKET, endpoint: store.endpoint, region: store.region, pathStyle: true, accessKey: store.accessKey, secretKey: store.secretKey };
  const databaseUrl = await createDatabase(adminDatabaseUrl, "svc_bench_s3");
  const suite = await startServices({
    databaseUrl,
    redisUrl,
    natsUrl,
    dataDir: join(dataDir, "suite-s3"),
    env: {
      SVC_RATE_LIMIT: String(RATE_LIMIT),
      SVC_TENANT: "s3bench",
      SVC_STORAGE_RECLAIM_GRACE: "1s",
      SVC_STORAGE: "s3",
      SVC_STORAGE_S3_BUCKET: S3_BUCKET,
      SVC_STORAGE_S3_ENDPOINT: store.endpoint,
      SVC_STORAGE_S3_REGION: store.region,
      SVC_STORAGE_S3_PATH_STYLE: "true",
      SVC_STORAGE_S3_ACCESS_KEY: store.accessKey,
      SVC_STORAGE_S3_SECRET_KEY: store.secretKey,
    },
  });
  cleanups.push(() => suite.stop());
  const blobs = s3BlobStore({ ...settings, readOnly: false });
  cleanups.push(async () => blobs.close());
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  cleanups.push(() => db.end());
  return { suite, blobs, db };
}

/** The S3 suite's figures at the size its tables were just grown to. */
async function measureS3(x: { suite: RunningServices; db: pg.Client }, key: string, files: number): Promise<Omit<NonNullable<SizeFigures["s3"]>, "filled">> {
  const uploadPerSecond = await uploadFiles(x.suite.gatewayUrl, x.suite.bootstrapKey, SCALE_SAMPLE);
  const gets = await measureGets(x.suite.gatewayUrl, key, files, GETS);
  log("scale: S3: a retention + reclaim walk over the index and the bucket");
  const walk = await measureWalk(apiClient(x.suite.gatewayUrl, x.suite.bootstrapKey), x.suite.pid("walker"));
  log(`scale: S3: walk ${walk.outcome} in ${walk.seconds.toFixed(1)} s over ${walk.entries} entries`);
  return { uploadPerSecond, gets, walk };
}

export async function runScale(): Promise<void> {
  const cleanups: Array<() => Promise<unknown>> = [];
  const t0 = performance.now();
  try {
    rmSync(suiteDir, { recursive: true, force: true });
    mkdirSync(dataDir, { recursive: true });
    // Every blob past its reclaim grace, as in a store older than an hour: the reclaim job then
    // asks the artifacts service about every page of blobs, which it would skip for young ones.
    const { infra, suite: s, databaseUrl } = await startBenchSuite(cleanups, {}, { SVC_STORAGE_RECLAIM_GRACE: "1s" });
    const api = apiClient(s.gatewayUrl, s.bootstrapKey);
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    cleanups.push(() => db.end());
    // The bench listens for credential.changed as every gateway does, to time the announcement.
    const bus = createBus({ url: infra.natsUrl, tenant: s.tenant, name: "bench-scale", log: createLogger("bench", "silent").log });
    cleanups.push(() => bus.close());
    const changes = announcements(bus);
    if (!(await bus.ready(15_000))) throw new Error("the bench could not connect to NATS");

    // The first calls of each path are slow while the processes warm up (JIT, connection pools):
    // a few of each before anything is timed. The members make the group; the first upload is
    // the file the key checks GET.
    log("scale: warm-up (20 keys, files and members through the API, not timed)");
    await mintKeys(api, 20);
    await uploadFiles(s.gatewayUrl, s.bootstrapKey, 20);
    await addMembers(api, 20);
    await defineScaleWalk(api);
    const state = newFillState();
    const fsBlobs = filesystemBlobStore({ root: s.storeRoot, readOnly: false });
    await fsBlobs.init();
    const s3 = S3 ? await startS3Suite(cleanups, infra.adminDatabaseUrl, infra.redisUrl, infra.natsUrl) : undefined;
    const s3State = newFillState();
    let s3Key = "";
    if (s3) {
      const s3Api = apiClient(s3.suite.gatewayUrl, s3.suite.bootstrapKey);
      s3Key = (await mintKeys(s3Api, 1)).keys[0]!;
      await uploadFiles(s3.suite.gatewayUrl, s3.suite.bootstrapKey, 20);
      await addMembers(s3Api, 20);
      await defineScaleWalk(s3Api);
    }
    const figures: SizeFigures[] = [];
    for (const size of SCALE_SIZES) {
      log(`scale: growing to ${size} keys, files and members`);
      const filled = await bulkFill(db, fsBlobs, s.tenant, state, size);
      log(`scale: the API sample (${SCALE_SAMPLE} mints and uploads, ${SCALE_CONCURRENCY} requests in flight)`);
      const minted = await mintKeys(api, SCALE_SAMPLE);
      const uploadPerSecond = await uploadFiles(s.gatewayUrl, s.bootstrapKey, SCALE_SAMPLE);
      log("scale: listings, key checks, GETs");
      const listings = await measureListings(api, db);
      const keyChecks = await measureKeyChecks(s.gatewayUrl, minted.keys);
      const gets = await measureGets(s.gatewayUrl, minted.keys[1] ?? minted.keys[0]!, state.files, GETS);
      log("scale: a retention + reclaim walk over the index");
      const walk = await measureWalk(api, s.pid("walker"));
      log(`scale: walk ${walk.outcome} in ${walk.seconds.toFixed(1)} s over ${walk.entries} entries`);
      log("scale: a grant to the group and its removal");
      const group = await measureGroupChange(api, changes, `oidc/scale-${String(0).padStart(8, "0")}`, fetchWithKey(s.gatewayUrl, minted.keys[0]!));
      let s3Figures: SizeFigures["s3"];
      if (s3) {
        log(`scale: S3: growing to ${size} keys, files and members`);
        const s3Filled = await bulkFill(s3.db, s3.blobs, s3.suite.tenant, s3State, size);
        s3Figures = { filled: s3Filled, ...(await measureS3(s3, s3Key, s3State.files)) };
      }
      figures.push({ size, filled, mintPerSecond: minted.perSecond, uploadPerSecond, listings, keyChecks, gets, walk, group, ...(s3Figures ? { s3: s3Figures } : {}) });
    }
    printScale(figures, (performance.now() - t0) / 60_000);
  } finally {
    for (const c of cleanups.reverse()) await c().catch((err) => log(`cleanup: ${(err as Error).message}`));
    await closeScaleAgent().catch(() => {});
    rmSync(suiteDir, { recursive: true, force: true });
  }
}

const n0 = (x: number) => Math.round(x).toLocaleString("en-US");
const ms = (x: number | undefined) => (x === undefined ? "not seen" : x < 10 ? `${x.toFixed(1)} ms` : `${Math.round(x)} ms`);

const mib = (x: number | undefined) => (x === undefined ? "unknown" : `${Math.round(x)} MiB`);
const p50p99 = (x: Spread) => `${ms(x.p50)} / ${ms(x.p99)}`;

function printScale(f: SizeFigures[], minutes: number): void {
  const [a, b] = [f[0]!, f[f.length - 1]!];
  type Row = [label: string, value: (x: SizeFigures) => string, ratio?: (x: SizeFigures) => number | undefined];
  const rows: Row[] = [
    ["keys / files / members (rows)", (x) => `${n0(x.filled.keys)} / ${n0(x.filled.files)} / ${n0(x.filled.members)}`],
    ["distinct blobs of the filled files", (x) => n0(x.filled.blobs)],
    ["bulk fill to this size (s, set-up)", (x) => x.filled.seconds.toFixed(1)],
    ["database size (MB)", (x) => n0(x.filled.databaseBytes / 1e6)],
    [`mint (keys/s, API, ${SCALE_SAMPLE})`, (x) => n0(x.mintPerSecond), (x) => x.mintPerSecond],
    [`upload 1 KiB (files/s, gateway, ${SCALE_SAMPLE})`, (x) => n0(x.uploadPerSecond), (x) => x.uploadPerSecond],
    [`key check, cold (p50 / p99 of ${SCALE_SAMPLE} keys)`, (x) => p50p99(x.keyChecks.cold), (x) => x.keyChecks.cold.p50],
    ["key check, hot (p50 / p99)", (x) => p50p99(x.keyChecks.hot), (x) => x.keyChecks.hot.p50],
    [`artifact GET (p50 / p99 of ${GETS}, gateway)`, (x) => p50p99(x.gets), (x) => x.gets.p50],
    ["files: first page", (x) => ms(x.listings.files.first), (x) => x.listings.files.first],
    ["files: deep page (after = 501st from the end)", (x) => ms(x.listings.files.deep), (x) => x.listings.files.deep],
    ["credentials: first page", (x) => ms(x.listings.credentials.first), (x) => x.listings.credentials.first],
    ["credentials: deep page", (x) => ms(x.listings.credentials.deep), (x) => x.listings.credentials.deep],
    ["group members: first page", (x) => ms(x.listings.members.first), (x) => x.listings.members.first],
    ["group members: deep page", (x) => ms(x.listings.members.deep), (x) => x.listings.members.deep],
    ["walk retention + reclaim (s)", (x) => x.walk.seconds.toFixed(1), (x) => x.walk.seconds],
    ["walk: entries per second", (x) => n0(x.walk.entries / x.walk.seconds), (x) => x.walk.entries / x.walk.seconds],
    ["walk: entries / blobs", (x) => `${n0(x.walk.entries)} / ${x.walk.blobs === undefined ? "?" : n0(x.walk.blobs)}`],
    ["walk: outcome; removed, blobs reclaimed, problems", (x) => `${x.walk.outcome}; ${n0(x.walk.removed)}, ${n0(x.walk.reclaimed)}, ${n0(x.walk.problems)}`],
    ["walker RSS before the walk", (x) => mib(x.walk.rssBeforeMiB)],
    ["walker peak RSS during the walk", (x) => `${mib(x.walk.peakRssMiB)}${x.walk.peakSinceWalk ? "" : " (since start)"}`, (x) => x.walk.peakRssMiB],
    ["group grant: call", (x) => ms(x.group.grantMs), (x) => x.group.grantMs],
    ["group grant: announced after", (x) => ms(x.group.grantAnnouncedMs), (x) => x.group.grantAnnouncedMs],
    ["group grant: a member's rights show it (each time)", (x) => (x.group.visible ? "yes" : "NO")],
    ["hot key's next request after a grant", (x) => ms(x.group.hotAfterMs)],
    ["group grant removed: call", (x) => ms(x.group.revokeMs), (x) => x.group.revokeMs],
    ["group grant removed: announced after", (x) => ms(x.group.revokeAnnouncedMs), (x) => x.group.revokeAnnouncedMs],
  ];
  if (f.every((x) => x.s3)) {
    const ratio = (x: number | undefined, y: number | undefined) => (x === undefined || y === undefined || y === 0 ? "?" : `x${(x / y).toFixed(2)}`);
    rows.push(
      ["S3: distinct blobs (objects in the bucket) / bulk fill (s)", (x) => `${n0(x.s3!.filled.blobs)} / ${x.s3!.filled.seconds.toFixed(1)}`],
      [`S3: upload 1 KiB (files/s, gateway, ${SCALE_SAMPLE})`, (x) => n0(x.s3!.uploadPerSecond), (x) => x.s3!.uploadPerSecond],
      ["S3: upload rate / filesystem's", (x) => ratio(x.s3!.uploadPerSecond, x.uploadPerSecond)],
      [`S3: artifact GET (p50 / p99 of ${GETS}, gateway)`, (x) => p50p99(x.s3!.gets), (x) => x.s3!.gets.p50],
      ["S3: GET p50 / filesystem's", (x) => ratio(x.s3!.gets.p50, x.gets.p50)],
      ["S3: walk retention + reclaim (s)", (x) => x.s3!.walk.seconds.toFixed(1), (x) => x.s3!.walk.seconds],
      ["S3: walk time / filesystem's", (x) => ratio(x.s3!.walk.seconds, x.walk.seconds)],
      ["S3: walk entries per second", (x) => n0(x.s3!.walk.entries / x.s3!.walk.seconds), (x) => x.s3!.walk.entries / x.s3!.walk.seconds],
      ["S3: walk entries / blobs", (x) => `${n0(x.s3!.walk.entries)} / ${x.s3!.walk.blobs === undefined ? "?" : n0(x.s3!.walk.blobs)}`],
      ["S3: walk outcome; removed, blobs reclaimed, problems", (x) => `${x.s3!.walk.outcome}; ${n0(x.s3!.walk.removed)}, ${n0(x.s3!.walk.reclaimed)}, ${n0(x.s3!.walk.problems)}`],
      ["S3: walker peak RSS during the walk", (x) => mib(x.s3!.walk.peakRssMiB), (x) => x.s3!.walk.peakRssMiB],
    );
  }
  const width = Math.max(...rows.map((r) => r[0].length));
  const cells = rows.map(([label, value, ratio]) => {
    const ra = ratio?.(a);
    const rb = ratio?.(b);
    const growth = f.length > 1 && ra !== undefined && rb !== undefined && ra > 0 ? `x${(rb / ra).toFixed(2)}` : "";
    return [label.padEnd(width), ...f.map(value), growth];
  });
  const widths = f.map((_, i) => Math.max(n0(f[i]!.size).length, ...cells.map((c) => c[i + 1]!.length)));
  const line = (c: string[]) => `  ${c[0]}  ${f.map((_, i) => c[i + 1]!.padStart(widths[i]!)).join("  ")}  ${c[f.length + 1]}`;
  console.log(
    `\nScale: one suite grown through ${f.length} sizes, ${SCALE_ROWS_PER_BLOB} filled files per distinct blob, run of ${minutes.toFixed(0)} min (listing pages hold 500 items, medians of 5; the group change: medians of 5 grants and removals)\n`,
  );
  console.log(line(["".padEnd(width), ...f.map((x) => n0(x.size)), f.length > 1 ? "largest/smallest" : ""]));
  for (const c of cells) console.log(line(c));
  console.log("");
}
