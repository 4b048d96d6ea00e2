// `npm run bench -- --oci`: our OCI registry (format `oci` at /v2/, through the gateway, with a
// key sent as Basic) side by side with the registry people run today, Debian's docker-registry
// (CNCF distribution 2.8) on the same disk, with bcrypt htpasswd authentication, in one run:
//   - blob pull MB/s of a 256 MiB layer (bench/downloader.ts, targets taking turns);
//   - manifest GETs per second (autocannon, the same connections and rounds as the small files);
//   - the wall time of `skopeo copy` of a 5-layer image in (an OCI layout into the registry, a
//     new image name each round, so every blob is sent) and out (the registry into a fresh layout).
// Figures are printed as ratios ours/distribution, never asserted. Goal: at or above
// distribution on every figure (bench/README.md, "OCI against docker-registry").
//
// With --s3 both registries store on one Ceph RADOS Gateway of the bench's own, each in a bucket
// of its own: ours with svc.storage=s3, streamed (the default) and, through a second artifacts
// process and gateway on the same database and bucket, with svc.storage.s3.redirect=true;
// distribution with its `s3` driver as operators run it (blob GETs redirected to pre-signed
// URLs, the default; the in-memory blob descriptor cache of Debian's config). The object store's
// CPU (radosgw and ceph-osd) is counted beside each registry's own (bench/README.md, "OCI on S3").
import { spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { createReadStream, createWriteStream, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import autocannon from "autocannon";
import { request } from "undici";
import { ensureDebianPackages, freePort, startObjectStore, type ObjectStore } from "@svc/devstack";
import type { ServiceName } from "@svc/devstack/service-runner";
import { collectProfile, summariseProfile } from "./cpuprofile.js";
import { largeBody } from "./bench-files.js";
import { startBenchSuite, startTcpGateway } from "./bench-suite.js";
import { startDownloader } from "./large-files.js";
import { tarOf } from "./npm-packages.js";
import { CONNECTIONS, dataDir, DURATION, LARGE_RUNS, LARGE_SIZE, log, PROFILE, PROFILE_SERVICE, profileDir, repoRoot, ROUNDS, S3, suiteDir, WARMUP } from "./options.js";
import { cpuMs } from "./procstat.js";
import { table } from "./report.js";

const ociDir = join(dataDir, "oci");
const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
const OCI_CONFIG = "application/vnd.oci.image.config.v1+json";
const OCI_LAYER = "application/vnd.oci.image.layer.v1.tar";
/** The layers of the image `skopeo copy` moves: five of 16 MiB. */
const COPY_LAYERS = 5;
const COPY_LAYER_BYTES = 16 * 1024 * 1024;
const COPY_ROUNDS = 3;
/** The buckets of the --s3 run, one per registry, on the same RADOS Gateway. */
const OURS_BUCKET = "svc-bench-oci";
const DISTRIBUTION_BUCKET = "distribution-bench-oci";

/** One registry as the bench reaches it: its origin, the repository prefix of its images, Basic credentials. */
interface Registry {
  label: string;
  origin: string;
  /** Prepended to an image name: `images/` on ours (the repository), nothing on distribution. */
  prefix: string;
  user: string;
  password: string;
  /** The server processes whose CPU a figure counts: the gateway and the artifacts service, or distribution's one. */
  pids: () => number[];
}

const basic = (r: Registry) => `Basic ${Buffer.from(`${r.user}:${r.password}`).toString("base64")}`;
const sha256 = (b: Buffer) => `sha256:${createHash("sha256").update(b).digest("hex")}`;

/**
 * The object store as the registries are told it: `localhost`, not the 127.0.0.1 the devstack
 * names, so a client following a redirect to the bucket changes host name and drops the
 * registry's Authorization there (Go's client and npm keep it across ports of one host name, and
 * RGW refuses a request signed both ways: docs/install/s3-redirect.md).
 */
const storeEndpoint = (store: ObjectStore) => `http://localhost:${store.port}`;

/** distribution's `storage` section: its filesystem driver, or (--s3) its s3 driver on the bench's RADOS Gateway. */
function distributionStorage(dir: string, store: ObjectStore | undefined): string {
  if (!store) return `storage:
  filesystem:
    rootdirectory: ${join(dir, "storage")}
  delete:
    enabled: true`;
  // distribution 2.8's s3-aws driver has no forcepathstyle: a regionendpoint turns path-style on.
  // Blob GETs answer 307 to a pre-signed URL unless redirect.disable: the default is kept.
  return `storage:
  s3:
    region: ${store.region}
    regionendpoint: ${storeEndpoint(store)}
    bucket: ${DISTRIBUTION_BUCKET}
    accesskey: ${store.accessKey}
    secretkey: ${store.secretKey}
    secure: false
    v4auth: true
    rootdirectory: /registry
  cache:
    blobdescriptor: inmemory
  redirect:
    disable: false
  delete:
    enabled: true`;
}

/** docker-registry (distribution 2.8) on a free port, its storage and htpasswd (bcrypt) under the bench's data folder (--s3: its storage in a bucket). */
async function startDistribution(cleanups: Array<() => Promise<unknown>>, store?: ObjectStore): Promise<Registry> {
  await ensureDebianPackages(["docker-registry", "apache2-utils"], log);
  const dir = join(ociDir, "distribution");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, "storage"), { recursive: true });
  const password = randomBytes(18).toString("base64url");
  const hashed = spawnSync("htpasswd", ["-nbB", "bench", password], { encoding: "utf8" });
  if (hashed.status !== 0) throw new Error(`htpasswd failed: ${hashed.stderr}`);
  writeFileSync(join(dir, "htpasswd"), hashed.stdout);
  const port = await freePort();
  writeFileSync(
    join(dir, "config.yml"),
    `version: 0.1
log:
  level: error
  accesslog:
    disabled: true
${distributionStorage(dir, store)}
http:
  addr: 127.0.0.1:${port}
auth:
  htpasswd:
    realm: bench
    path: ${join(dir, "htpasswd")}
`,
  );
  // Its config alone says where it stores: the machine's AWS_* variables (a CA bundle the S3 driver's transport refuses to load) are not its.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("AWS_")));
  const child = spawn("docker-registry", ["serve", join(dir, "config.yml")], { stdio: ["ignore", "ignore", "pipe"], env });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr = (stderr + c).slice(-4000)));
  const kill = () => child.kill("SIGKILL");
  process.once("exit", kill);
  cleanups.push(async () => {
    process.removeListener("exit", kill);
    child.kill("SIGTERM");
  });
  const origin = `http://127.0.0.1:${port}`;
  for (const end = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 200))) {
    const answered = await request(`${origin}/v2/`).then((r) => (r.body.dump(), r.statusCode), () => 0);
    if (answered === 401) break;
    if (child.exitCode !== null || Date.now() > end) throw new Error(`docker-registry did not start: ${stderr}`);
  }
  return { label: store ? "distribution (redirect)" : "distribution", origin, prefix: "", user: "bench", password, pids: () => [child.pid ?? 0] };
}

/** A monolithic blob push (POST, then PUT with the digest), the body streamed from `body()`. */
async function pushBlob(r: Registry, image: string, digest: string, size: number, body: () => NodeJS.ReadableStream | Buffer): Promise<void> {
  const auth = { authorization: basic(r) };
  const started = await request(`${r.origin}/v2/${r.prefix}${image}/blobs/uploads/`, { method: "POST", headers: auth });
  await started.body.dump();
  const location = started.headers.location;
  if (started.statusCode !== 202 || typeof location !== "string") throw new Error(`${r.label}: POST blobs/uploads answered ${started.statusCode}`);
  const url = new URL(location, r.origin);
  url.searchParams.set("digest", digest);
  const put = await request(url, { method: "PUT", headers: { ...auth, "content-type": "application/octet-stream", "content-length": String(size) }, body: body() as never });
  const text = await put.body.text();
  if (put.statusCode !== 201) throw new Error(`${r.label}: PUT of blob ${digest} answered ${put.statusCode}: ${text.slice(0, 300)}`);
}

async function pushManifest(r: Registry, image: string, tag: string, manifest: Buffer): Promise<void> {
  const res = await request(`${r.origin}/v2/${r.prefix}${image}/manifests/${tag}`, { method: "PUT", headers: { authorization: basic(r), "content-type": OCI_MANIFEST }, body: manifest });
  const text = await res.body.text();
  if (res.statusCode !== 201) throw new Error(`${r.label}: PUT manifest answered ${res.statusCode}: ${text.slice(0, 300)}`);
}

/** The 256 MiB layer, written once to disk (its digest known before any push), and pushed to each registry with a small image around it. */
async function seed(registries: Registry[]): Promise<{ layer: string }> {
  const file = join(ociDir, "layer-256m.bin");
  const hash = createHash("sha256");
  await pipeline(largeBody(), async function* (source) {
    for await (const chunk of source) {
      hash.update(chunk as Buffer);
      yield chunk;
    }
  }, createWriteStream(file));
  const layer = `sha256:${hash.digest("hex")}`;
  const config = Buffer.from(JSON.stringify({ architecture: "amd64", os: "linux", rootfs: { type: "layers", diff_ids: [layer] } }));
  const manifest = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: OCI_MANIFEST, config: { mediaType: OCI_CONFIG, digest: sha256(config), size: config.length }, layers: [{ mediaType: OCI_LAYER, digest: layer, size: LARGE_SIZE }] }));
  for (const r of registries) {
    const t0 = performance.now();
    await pushBlob(r, "bench/big", layer, LARGE_SIZE, () => createReadStream(file));
    await pushBlob(r, "bench/big", sha256(config), config.length, () => config);
    await pushManifest(r, "bench/big", "v1", manifest);
    log(`  ${r.label}: 256 MiB layer pushed in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  rmSync(file, { force: true });
  return { layer };
}

/** An OCI image layout of COPY_LAYERS layers, for `skopeo copy oci:<dir>:v1`. */
function writeLayout(dir: string): void {
  mkdirSync(join(dir, "blobs", "sha256"), { recursive: true });
  const blob = (b: Buffer) => {
    const d = sha256(b);
    writeFileSync(join(dir, "blobs", "sha256", d.slice("sha256:".length)), b);
    return d;
  };
  const layers = Array.from({ length: COPY_LAYERS }, (_, i) => {
    const tar = tarOf({ [`layer-${i}.txt`]: randomBytes((COPY_LAYER_BYTES * 3) / 4).toString("base64") });
    return { mediaType: OCI_LAYER, digest: blob(tar), size: tar.length };
  });
  const config = Buffer.from(JSON.stringify({ architecture: "amd64", os: "linux", rootfs: { type: "layers", diff_ids: layers.map((l) => l.digest) } }));
  const manifest = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: OCI_MANIFEST, config: { mediaType: OCI_CONFIG, digest: blob(config), size: config.length }, layers }));
  const m = blob(manifest);
  writeFileSync(join(dir, "index.json"), JSON.stringify({ schemaVersion: 2, manifests: [{ mediaType: OCI_MANIFEST, digest: m, size: manifest.length, annotations: { "org.opencontainers.image.ref.name": "v1" } }] }));
  writeFileSync(join(dir, "oci-layout"), JSON.stringify({ imageLayoutVersion: "1.0.0" }));
}

/** One `skopeo copy`, timed; throws with skopeo's words when it fails. */
async function skopeoCopy(args: string[]): Promise<number> {
  const t0 = performance.now();
  const child = spawn("skopeo", ["copy", "--quiet", ...args], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  if (code !== 0) throw new Error(`skopeo copy ${args.filter((a) => !a.includes(":") || a.startsWith("oci:") || a.startsWith("docker:")).join(" ")} failed: ${stderr.slice(-1000)}`);
  return (performance.now() - t0) / 1000;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function runOci(): Promise<void> {
  const cleanups: Array<() => Promise<unknown>> = [];
  try {
    rmSync(suiteDir, { recursive: true, force: true });
    rmSync(ociDir, { recursive: true, force: true });
    mkdirSync(ociDir, { recursive: true });
    await ensureDebianPackages(["skopeo"], log);
    let store: ObjectStore | undefined;
    let storeEnv: Record<string, string> = {};
    if (S3) {
      rmSync(join(dataDir, "objectstore"), { recursive: true, force: true });
      log("starting a RADOS Gateway of the bench's own (Ceph's packages are installed when missing), a bucket per registry");
      store = await startObjectStore({ dataDir: join(dataDir, "objectstore"), log: (l) => log(l) });
      cleanups.push(() => store!.stop());
      await store.createBucket(OURS_BUCKET);
      await store.createBucket(DISTRIBUTION_BUCKET);
      storeEnv = {
        SVC_STORAGE: "s3",
        SVC_STORAGE_S3_BUCKET: OURS_BUCKET,
        SVC_STORAGE_S3_ENDPOINT: storeEndpoint(store),
        SVC_STORAGE_S3_REGION: store.region,
        SVC_STORAGE_S3_PATH_STYLE: "true",
        SVC_STORAGE_S3_ACCESS_KEY: store.accessKey,
        SVC_STORAGE_S3_SECRET_KEY: store.secretKey,
      };
    }
    // --profile[=service]: that service runs under --cpu-prof through the whole run; its profile is printed after the figures.
    const nodeArgs: Partial<Record<ServiceName, string[]>> = PROFILE ? { [PROFILE_SERVICE!]: ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] } : {};
    if (PROFILE) rmSync(profileDir, { recursive: true, force: true });
    const s = (await startBenchSuite(cleanups, nodeArgs, storeEnv)).suite;
    const created = await request(`${s.gatewayUrl}/api/repositories`, { method: "POST", headers: { "service-repository-key": s.bootstrapKey, "content-type": "application/json" }, body: JSON.stringify({ name: "images", format: "oci" }) });
    if (created.statusCode !== 201) throw new Error(`creating the oci repository answered ${created.statusCode}: ${await created.body.text()}`);
    await created.body.dump();
    const ours: Registry = { label: store ? "ours (streamed)" : s.socketUrls ? "ours (gateway, socket)" : "ours (gateway)", origin: s.gatewayUrl, prefix: "images/", user: "svc", password: s.bootstrapKey, pids: () => [s.pid("gateway") ?? 0, s.pid("artifacts") ?? 0] };
    // The second of ours: on the filesystem, the hop the socket replaces (a second gateway node
    // over loopback TCP in front of the same artifacts service); on S3, the bucket sending the
    // bytes (a second artifacts process with svc.storage.s3.redirect=true, same database and
    // bucket, and a gateway node in front of it, over TCP: only manifests and 307s cross that hop).
    let second: Registry | undefined;
    if (store) {
      const redirecting = await s.startReplica("artifacts", { SVC_STORAGE_S3_REDIRECT: "true" });
      cleanups.push(() => redirecting.stop());
      const gateway = await s.startGateway({ SVC_ARTIFACTS_URL: redirecting.url });
      cleanups.push(() => gateway.stop());
      second = { ...ours, label: "ours (redirect)", origin: gateway.url, pids: () => [gateway.pid ?? 0, redirecting.pid ?? 0] };
    } else {
      const tcp = await startTcpGateway(s, cleanups);
      second = tcp && { ...ours, label: "ours (gateway, TCP)", origin: tcp.url, pids: () => [tcp.pid ?? 0, s.pid("artifacts") ?? 0] };
    }
    const distribution = await startDistribution(cleanups, store);
    const registries = [ours, ...(second ? [second] : []), distribution];
    // The object store's processes (--s3): what it spends during a registry's turn is that registry's.
    const storeCpu = () => (store ? Object.entries(store.pids()).reduce((a, [name, pid]) => a + (name !== "mon" && pid ? cpuMs(pid) : 0), 0) : 0);

    log("pushing a 256 MiB layer and a small image around it to each registry");
    const { layer } = await seed([ours, distribution]);

    // ---- blob pull MB/s
    const client = startDownloader();
    cleanups.push(() => client.stop());
    const pulls = new Map(registries.map((r) => [r.label, [] as number[]]));
    // CPU the server side spent (ms), and the bytes it sent, per registry: a figure the machine's other load moves less than MB/s.
    const serverCpu = (r: Registry) => r.pids().reduce((a, pid) => a + (pid ? cpuMs(pid) : 0), 0);
    const pullCpu = new Map(registries.map((r) => [r.label, 0]));
    const pullStoreCpu = new Map(registries.map((r) => [r.label, 0]));
    log(`blob pulls: one warm-up of 256 MiB per registry, then ${LARGE_RUNS} rounds in turns`);
    for (let round = -1; round < LARGE_RUNS; round++) {
      for (const r of registries) {
        const cpu0 = serverCpu(r);
        const store0 = storeCpu();
        const mbps = await client.download(`${r.origin}/v2/${r.prefix}bench/big/blobs/${layer}`, { Authorization: basic(r) });
        if (round < 0) continue;
        pulls.get(r.label)!.push(mbps);
        pullCpu.set(r.label, pullCpu.get(r.label)! + serverCpu(r) - cpu0);
        pullStoreCpu.set(r.label, pullStoreCpu.get(r.label)! + storeCpu() - store0);
      }
    }

    // ---- manifest GETs per second
    const manifests = new Map(registries.map((r) => [r.label, { ok: 0, seconds: 0, non2xx: 0, p50: [] as number[], p99: [] as number[] }]));
    const cannon = (r: Registry, seconds: number) =>
      autocannon({ url: `${r.origin}/v2/${r.prefix}bench/big/manifests/v1`, connections: CONNECTIONS, pipelining: 1, duration: seconds, headers: { authorization: basic(r), accept: OCI_MANIFEST } });
    for (const r of registries) {
      log(`manifests: ${r.label}: ${WARMUP} s warm-up`);
      await cannon(r, WARMUP);
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const r of registries) {
        log(`manifests: ${r.label}: round ${round + 1}/${ROUNDS}, ${DURATION} s, ${CONNECTIONS} connections`);
        const res = await cannon(r, DURATION);
        const m = manifests.get(r.label)!;
        m.ok += res["2xx"];
        m.non2xx += res.non2xx;
        m.seconds += res.duration;
        m.p50.push(res.latency.p50);
        m.p99.push(res.latency.p99);
      }
    }

    // ---- skopeo copy in and out
    const layout = join(ociDir, "layout");
    writeLayout(layout);
    const copies = new Map(registries.map((r) => [r.label, { in: [] as number[], out: [] as number[], cpuIn: 0, cpuOut: 0, storeIn: 0, storeOut: 0 }]));
    log(`skopeo copy of a ${COPY_LAYERS}-layer image (${(COPY_LAYERS * COPY_LAYER_BYTES) / 1024 / 1024} MiB) in and out: a warm-up, then ${COPY_ROUNDS} rounds in turns`);
    // Round -1 warms up (the first push and pull of a freshly started service run code nothing ran before), as the blob pulls do.
    for (let round = -1; round < COPY_ROUNDS; round++) {
      for (const r of registries) {
        const host = new URL(r.origin).host;
        const creds = `${r.user}:${r.password}`;
        // A name of its own per registry: two of ours share one repository, and skopeo skips blobs already there.
        const image = `docker://${host}/${r.prefix}bench/copy-${registries.indexOf(r)}-${round + 1}:v1`;
        const c = round < 0 ? { in: [] as number[], out: [] as number[], cpuIn: 0, cpuOut: 0, storeIn: 0, storeOut: 0 } : copies.get(r.label)!;
        const cpu0 = serverCpu(r);
        const store0 = storeCpu();
        c.in.push(await skopeoCopy(["--dest-tls-verify=false", "--dest-creds", creds, `oci:${layout}:v1`, image]));
        const cpu1 = serverCpu(r);
        const store1 = storeCpu();
        const out = join(ociDir, `out-${round}-${r.label.split(" ")[0]}`);
        c.out.push(await skopeoCopy(["--src-tls-verify=false", "--src-creds", creds, image, `oci:${out}:v1`]));
        c.cpuIn += cpu1 - cpu0;
        c.cpuOut += serverCpu(r) - cpu1;
        c.storeIn += store1 - store0;
        c.storeOut += storeCpu() - store1;
        if (statSync(join(out, "index.json")).size === 0) throw new Error(`${r.label}: skopeo copied out an empty layout`);
        rmSync(out, { recursive: true, force: true });
      }
    }

    // ---- report
    const mbps = (label: string) => {
      const runs = pulls.get(label)!;
      return (runs.length * LARGE_SIZE) / runs.reduce((a, x) => a + LARGE_SIZE / (x * 1e6), 0) / 1e6;
    };
    const rps = (label: string) => manifests.get(label)!.ok / manifests.get(label)!.seconds;
    const cpuPerMB = (label: string) => pullCpu.get(label)! / ((pulls.get(label)!.length * LARGE_SIZE) / 1e6);
    const copyCpu = (label: string, way: "cpuIn" | "cpuOut" | "storeIn" | "storeOut") => copies.get(label)![way] / COPY_ROUNDS;
    const storeCpuPerMB = (label: string) => pullStoreCpu.get(label)! / ((pulls.get(label)!.length * LARGE_SIZE) / 1e6);
    const d = distribution.label;
    const mine = registries.filter((r) => r !== distribution).map((r) => r.label);
    // Each of ours, then distribution, then each of ours over distribution (higher: ours better).
    const row = (name: string, value: (label: string) => number, digits: number, higherIsBetter: boolean) => [
      name,
      ...[...mine, d].map((l) => value(l).toFixed(digits)),
      ...mine.map((l) => `x${(higherIsBetter ? value(l) / value(d) : value(d) / value(l)).toFixed(2)}`),
    ];
    const blank = (name: string, cell: (label: string) => string | number) => [name, ...[...mine, d].map(cell), ...mine.map(() => "")];
    const copyIn = (l: string) => median(copies.get(l)!.in);
    const copyOut = (l: string) => median(copies.get(l)!.out);
    const where = store ? "both on one Ceph RADOS Gateway, a bucket each" : "same disk";
    console.log(`\nOCI registry against docker-registry (distribution 2.8, bcrypt htpasswd), ${where}, one run (${new Date().toISOString()})\n`);
    console.log(
      table(
        ["figure", ...mine, d, ...mine.map((l) => `${l.replace(/^ours /, "")}/distribution`)],
        [
          row("blob pull, 256 MiB (MB/s)", mbps, 0, true),
          row("  server CPU per MB (ms)", cpuPerMB, 2, false),
          ...(store ? [row("  object store CPU per MB (ms)", storeCpuPerMB, 2, false), row("  both per MB (ms)", (l) => cpuPerMB(l) + storeCpuPerMB(l), 2, false)] : []),
          row("manifest GETs (per second)", rps, 0, true),
          blank("  p50 / p99 latency (ms)", (l) => `${median(manifests.get(l)!.p50)} / ${median(manifests.get(l)!.p99)}`),
          blank("  answers not 2xx", (l) => manifests.get(l)!.non2xx),
          row(`skopeo copy in, ${COPY_LAYERS} layers (s, median)`, copyIn, 2, false),
          row("  server CPU per copy in (ms)", (l) => copyCpu(l, "cpuIn"), 0, false),
          ...(store ? [row("  object store CPU per copy in (ms)", (l) => copyCpu(l, "storeIn"), 0, false)] : []),
          row(`skopeo copy out, ${COPY_LAYERS} layers (s, median)`, copyOut, 2, false),
          row("  server CPU per copy out (ms)", (l) => copyCpu(l, "cpuOut"), 0, false),
          ...(store ? [row("  object store CPU per copy out (ms)", (l) => copyCpu(l, "storeOut"), 0, false)] : []),
        ],
      ),
    );
    console.log("\nRatios above 1 mean ours is faster (for the copies: distribution's time over ours). Goal: at or above x1.00 on every figure.");
    if (store) console.log("Object store CPU: radosgw and ceph-osd during that registry's turns. With a redirect the blob's bytes come from the object store, not the registry's processes.");
    if (PROFILE) {
      const file = await collectProfile(s, PROFILE_SERVICE!, nodeArgs, profileDir);
      if (file) {
        const p = summariseProfile(file, repoRoot);
        console.log(`\n${PROFILE_SERVICE} service profile, the whole run (${file}): busy ${Math.round(p.busyMs)} ms of ${Math.round(p.totalMs)} ms`);
        for (const r of p.rows) console.log(`  ${r.selfMs.toFixed(0).padStart(7)} ms  ${(r.share * 100).toFixed(1).padStart(5)}%  ${r.name}`);
      }
    }
  } finally {
    for (const c of cleanups.reverse()) await c().catch((err) => log(`cleanup: ${(err as Error).message}`));
    rmSync(suiteDir, { recursive: true, force: true });
    rmSync(ociDir, { recursive: true, force: true });
    if (S3) rmSync(join(dataDir, "objectstore"), { recursive: true, force: true });
  }
}
