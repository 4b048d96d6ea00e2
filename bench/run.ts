// `npm run bench [-- --profile]`: how much of the artifacts service's own speed the gateway keeps.
//
// Starts Postgres/Redis/NATS under <repo>/.data/bench and every service (tools/devstack), stores
// a 1 KiB and a 256 MiB file through the gateway with the bootstrap key, then measures GETs of them
//   (a) through the gateway, with Service-Repository-Key,
//   (b) straight to the artifacts service, with the gateway's signed identity headers,
//   (c) through nginx in front of the artifacts service (when nginx is installed),
// and prints the figures. Nothing is asserted. See bench/README.md.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { cpus } from "node:os";
import { dirname, join, resolve } from "node:path";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { Agent, request } from "undici";
import { createDatabase, freePort, startInfra, type Infra } from "@svc/devstack";
import { startServices, type RunningServices, type ServiceName } from "@svc/devstack/service-runner";
import { SERVICE_NODE_OPTIONS } from "@svc/devstack/runtime";
import { identityHeaders } from "@svc/kit";
import { parseKey } from "@svc/keys";
import { summariseProfile } from "./cpuprofile.js";
import { findNginx, startNginx, type RunningNginx } from "./nginx.js";
import { cpuMs, selfCpuMs } from "./procstat.js";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");

// ---------------------------------------------------------------------------------------------
// options

function option(name: string, fallback: number): number {
  const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
  if (!arg) return fallback;
  const n = Number(arg.slice(name.length + 3));
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} needs a positive number`);
  return n;
}
const flag = (name: string) => process.argv.includes(`--${name}`);

if (flag("help")) {
  console.log(`usage: npm run bench -- [--profile] [--connections=50] [--duration=8] [--rounds=2] [--warmup=3] [--large-runs=5] [--rate-limit=999999999|0] [--no-nginx] [--no-large] [--no-small]`);
  process.exit(0);
}

const PROFILE = flag("profile");
const CONNECTIONS = option("connections", 50);
// The direct and nginx runs carry a signature made just before the run; it is valid for 60 s.
const DURATION = Math.min(option("duration", 8), 15);
const WARMUP = Math.min(option("warmup", 3), 15);
// Targets take turns, round after round: this machine's speed drifts, and a drift should not
// land on one target only.
const ROUNDS = Math.floor(option("rounds", 2));
const LARGE_RUNS = Math.floor(option("large-runs", 5));
const NGINX = !flag("no-nginx");
// The gateway's per-tenant rate limit (svc.rate-limit, requests per minute): high enough never to
// refuse a bench request, but on, so every request pays for it as it does in production. 0 = off.
const RATE_LIMIT = (() => {
  const arg = process.argv.find((a) => a.startsWith("--rate-limit="));
  const n = arg ? Number(arg.slice("--rate-limit=".length)) : 999_999_999;
  if (!Number.isInteger(n) || n < 0 || n > 999_999_999) throw new Error("--rate-limit needs a whole number from 0 to 999999999");
  return n;
})();
const LARGE = !flag("no-large");
const SMALL = !flag("no-small");

const SMALL_SIZE = 1024;
const LARGE_SIZE = 256 * 1024 * 1024;
const SMALL_PATH = "/repository/default/bench/small-1k.bin";
const LARGE_PATH = "/repository/default/bench/large-256m.bin";
const GOAL_SMALL = 0.5;
const GOAL_LARGE = 0.8;

const dataDir = join(repoRoot, ".data", "bench");
const suiteDir = join(dataDir, "suite");
const nginxDir = join(dataDir, "nginx");
const profileDir = join(dataDir, "profile");

// ---------------------------------------------------------------------------------------------
// output helpers

const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

function table(head: string[], rows: (string | number)[][]): string {
  const cells = [head, ...rows.map((r) => r.map(String))];
  const widths = head.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  // Figures are right-aligned, text left-aligned.
  const numeric = head.map((_, i) => cells.slice(1).every((r) => /^[-+\d.,%/ ]*$/.test(r[i] ?? "")));
  const line = (r: string[]) => r.map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join("  ").trimEnd();
  return [line(head), widths.map((w) => "-".repeat(w)).join("  "), ...cells.slice(1).map(line)].join("\n");
}

const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : "-");
const pct = (ratio: number) => (Number.isFinite(ratio) ? `${(ratio * 100).toFixed(1)}%` : "-");

// ---------------------------------------------------------------------------------------------
// CPU accounting: where the two cores go during a run

/** Process ids to account; `client` absent: this process (autocannon runs in it). */
type Procs = Partial<Record<"client" | "gateway" | "artifacts" | "nginx", number>>;
type CpuSnapshot = { client: number; gateway: number; artifacts: number; nginx: number };

function snapshot(procs: Procs): CpuSnapshot {
  return {
    client: procs.client ? cpuMs(procs.client) : selfCpuMs(),
    gateway: procs.gateway ? cpuMs(procs.gateway) : 0,
    artifacts: procs.artifacts ? cpuMs(procs.artifacts) : 0,
    nginx: procs.nginx ? cpuMs(procs.nginx) : 0,
  };
}

function cpuDelta(a: CpuSnapshot, b: CpuSnapshot): CpuSnapshot {
  return { client: b.client - a.client, gateway: b.gateway - a.gateway, artifacts: b.artifacts - a.artifacts, nginx: b.nginx - a.nginx };
}

// ---------------------------------------------------------------------------------------------
// runs

interface SmallRound {
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  non2xx: number;
  errors: number;
  seconds: number;
  cpu: CpuSnapshot;
}

async function cannon(url: string, headers: Record<string, string>, seconds: number): Promise<autocannon.Result> {
  return autocannon({ url, connections: CONNECTIONS, pipelining: 1, duration: seconds, headers });
}

/** One measured run (after a warm-up on the first round); headers are made right before each run (signatures age). */
async function smallRound(label: string, round: number, base: string, headers: () => Record<string, string>, procs: Procs): Promise<SmallRound> {
  if (round === 0) {
    log(`small: ${label}: ${WARMUP} s warm-up`);
    await cannon(base + SMALL_PATH, headers(), WARMUP);
  }
  log(`small: ${label}: round ${round + 1}/${ROUNDS}, ${DURATION} s, ${CONNECTIONS} connections`);
  const before = snapshot(procs);
  const r = await cannon(base + SMALL_PATH, headers(), DURATION);
  const cpu = cpuDelta(before, snapshot(procs));
  return { rps: r["2xx"] / r.duration, p50: r.latency.p50, p99: r.latency.p99, ok: r["2xx"], non2xx: r.non2xx, errors: r.errors, seconds: r.duration, cpu };
}

interface SmallResult {
  label: string;
  rounds: SmallRound[];
  /** All rounds together: 2xx answers per second. */
  rps: number;
  ok: number;
  seconds: number;
  cpu: CpuSnapshot;
}

function summariseSmall(label: string, rounds: SmallRound[]): SmallResult {
  const ok = rounds.reduce((a, r) => a + r.ok, 0);
  const seconds = rounds.reduce((a, r) => a + r.seconds, 0);
  const cpu = rounds.reduce((a, r) => ({ client: a.client + r.cpu.client, gateway: a.gateway + r.cpu.gateway, artifacts: a.artifacts + r.cpu.artifacts, nginx: a.nginx + r.cpu.nginx }), { client: 0, gateway: 0, artifacts: 0, nginx: 0 });
  return { label, rounds, rps: ok / seconds, ok, seconds, cpu };
}

interface LargeResult {
  label: string;
  runs: number[];
  mbps: number;
  cpu: CpuSnapshot;
  seconds: number;
}

const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: 4 });

/** The large-file client: bench/downloader.ts in its own process, driven over stdin/stdout. */
interface Downloader {
  pid: number;
  /** Downloads once, discarding the body; MB/s (10^6 bytes per second). */
  download(url: string, headers: Record<string, string>): Promise<number>;
  stop(): Promise<void>;
}

function startDownloader(): Downloader {
  const child = spawn(process.execPath, [...SERVICE_NODE_OPTIONS, "--import", "tsx", join(repoRoot, "bench", "downloader.ts")], { stdio: ["pipe", "pipe", "inherit"] });
  const waiting = new Map<number, { resolve: (a: Record<string, unknown>) => void; reject: (e: Error) => void }>();
  let next = 1;
  let buf = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    buf += chunk;
    let i: number;
    while ((i = buf.indexOf("\n")) >= 0) {
      const answer = JSON.parse(buf.slice(0, i)) as Record<string, unknown>;
      buf = buf.slice(i + 1);
      const w = waiting.get(answer.id as number);
      waiting.delete(answer.id as number);
      w?.resolve(answer);
    }
  });
  child.once("exit", (code) => {
    for (const w of waiting.values()) w.reject(new Error(`the downloader exited (${code})`));
    waiting.clear();
  });
  const kill = () => child.kill("SIGKILL");
  process.once("exit", kill);
  return {
    pid: child.pid ?? 0,
    async download(url, headers) {
      const id = next++;
      const answer = await new Promise<Record<string, unknown>>((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        child.stdin.write(`${JSON.stringify({ id, url, headers })}\n`);
      });
      if (answer.error) throw new Error(`GET ${url}: ${String(answer.error)}`);
      if (answer.status !== 200 || answer.bytes !== LARGE_SIZE) throw new Error(`GET ${url} answered ${String(answer.status)} with ${String(answer.bytes)} bytes (expected 200, ${LARGE_SIZE})`);
      return (answer.bytes as number) / (answer.seconds as number) / 1e6;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        process.removeListener("exit", kill);
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const timer = setTimeout(kill, 5000);
        child.once("exit", () => {
          clearTimeout(timer);
          resolve();
        });
        child.stdin.end();
      }),
  };
}

/** One timed download, with the CPU the processes spent on it. */
async function largeOnce(client: Downloader, base: string, headers: () => Record<string, string>, procs: Procs): Promise<{ mbps: number; seconds: number; cpu: CpuSnapshot }> {
  const p = { ...procs, client: client.pid };
  const before = snapshot(p);
  const t0 = performance.now();
  const mbps = await client.download(base + LARGE_PATH, headers());
  return { mbps, seconds: (performance.now() - t0) / 1000, cpu: cpuDelta(before, snapshot(p)) };
}

// ---------------------------------------------------------------------------------------------
// setup

async function put(url: string, key: string, body: Buffer | Readable, size: number): Promise<void> {
  const res = await request(url, {
    method: "PUT",
    headers: { "service-repository-key": key, "content-type": "application/octet-stream", "content-length": String(size) },
    body,
    dispatcher,
  });
  const text = await res.body.text();
  if (res.statusCode !== 200 && res.statusCode !== 201) throw new Error(`PUT ${url} answered ${res.statusCode}: ${text.slice(0, 300)}`);
}

/** 256 MiB produced 1 MiB at a time: never held in memory. */
function largeBody(): Readable {
  const chunk = randomBytes(1024 * 1024);
  let left = LARGE_SIZE;
  return Readable.from(
    (function* () {
      while (left > 0) {
        const n = Math.min(left, chunk.length);
        left -= n;
        yield n === chunk.length ? chunk : chunk.subarray(0, n);
      }
    })(),
    { objectMode: false },
  );
}

async function check(label: string, url: string, headers: Record<string, string>, size: number): Promise<void> {
  const res = await request(url, { headers, dispatcher });
  let n = 0;
  for await (const c of res.body) n += (c as Buffer).length;
  if (res.statusCode !== 200 || n !== size) throw new Error(`${label}: GET ${url} answered ${res.statusCode} with ${n} bytes (expected 200, ${size})`);
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const cleanups: Array<() => Promise<unknown>> = [];
  const onSignal = (sig: NodeJS.Signals) => {
    log(`${sig}: stopping (exit hooks kill the services, nginx and the servers)`);
    process.exit(130);
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  let infra: Infra | undefined;
  let suite: RunningServices | undefined;
  let nginx: RunningNginx | undefined;
  const nginxBin = NGINX ? findNginx() : undefined;

  try {
    rmSync(suiteDir, { recursive: true, force: true });
    rmSync(nginxDir, { recursive: true, force: true });
    rmSync(profileDir, { recursive: true, force: true });
    mkdirSync(dataDir, { recursive: true });

    log(`starting Postgres, Redis and NATS under ${join(dataDir, "infra")}`);
    infra = await startInfra({ dataDir: join(dataDir, "infra"), log: (l) => log(l) });
    cleanups.push(() => infra!.stop());
    const databaseUrl = await createDatabase(infra.adminDatabaseUrl, "svc_bench");

    // Read by startServices at every launch: the gateway is relaunched with --cpu-prof for the
    // small-file runs only (--profile).
    const nodeArgs: Partial<Record<ServiceName, string[]>> = {};
    log("starting the services");
    suite = await startServices({
      databaseUrl,
      redisUrl: infra.redisUrl,
      natsUrl: infra.natsUrl,
      dataDir: suiteDir,
      nodeArgs,
      env: { SVC_RATE_LIMIT: String(RATE_LIMIT) },
    });
    cleanups.push(() => suite!.stop());
    const s = suite;

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
      log("restarting the gateway under --cpu-prof for the small-file runs");
      mkdirSync(profileDir, { recursive: true });
      nodeArgs.gateway = ["--cpu-prof", `--cpu-prof-dir=${profileDir}`];
      await s.stopService("gateway", "SIGTERM");
      await s.startService("gateway");
    }

    // The cost of the rate limit, in the same run: a second gateway node in front of the same
    // upstreams with the limit off (svc.rate-limit=0), taking turns with the limited one.
    const unlimited = SMALL && RATE_LIMIT !== 0 ? await s.startGateway({ SVC_RATE_LIMIT: "0" }) : undefined;
    if (unlimited) cleanups.push(() => unlimited.stop());
    if (unlimited) await check("gateway, no limit", unlimited.url + SMALL_PATH, keyHeaders(), SMALL_SIZE);

    // ---- small files: each round runs gateway, (gateway without the limit,) direct, nginx in turn
    const smallRounds: Record<string, SmallRound[]> = { gateway: [], "gateway, no limit": [], direct: [], nginx: [] };
    for (let round = 0; SMALL && round < ROUNDS; round++) {
      smallRounds.gateway!.push(await smallRound("gateway", round, s.gatewayUrl, keyHeaders, procs()));
      if (unlimited) smallRounds["gateway, no limit"]!.push(await smallRound("gateway, no limit", round, unlimited.url, keyHeaders, { ...procs(), gateway: unlimited.pid }));
      smallRounds.direct!.push(await smallRound("direct", round, s.urls.artifacts, signed(SMALL_PATH), procs()));
      const n = await withNginx((url) => smallRound("nginx", round, url, () => ({}), procs()));
      if (n) smallRounds.nginx!.push(n);
    }
    const small = Object.entries(smallRounds)
      .filter(([, r]) => r.length > 0)
      .map(([label, r]) => summariseSmall(label, r));

    let profileFile: string | undefined;
    if (PROFILE) {
      log("stopping the profiled gateway so it writes its profile, then starting it again without --cpu-prof");
      await s.stopService("gateway", "SIGTERM");
      // One file per thread (tsx's module hooks run on a worker thread): the main thread's is the biggest.
      const files = existsSync(profileDir) ? readdirSync(profileDir).filter((f) => f.endsWith(".cpuprofile")) : [];
      profileFile = files.map((f) => join(profileDir, f)).sort((a, b) => statSync(b).size - statSync(a).size)[0];
      delete nodeArgs.gateway;
      await s.startService("gateway");
    }

    // ---- large files: a warm-up download each, then rounds of gateway, direct, nginx in turn
    const large: LargeResult[] = [];
    if (LARGE) {
      const client = startDownloader();
      cleanups.push(() => client.stop());
      const targets: { label: string; run: (procs: Procs) => Promise<{ mbps: number; seconds: number; cpu: CpuSnapshot } | undefined> }[] = [
        { label: "gateway", run: (p) => largeOnce(client, s.gatewayUrl, keyHeaders, p) },
        { label: "direct", run: (p) => largeOnce(client, s.urls.artifacts, signed(LARGE_PATH), p) },
        ...(nginxBin ? [{ label: "nginx", run: (_p: Procs) => withNginx((url) => largeOnce(client, url, () => ({}), procs())) }] : []),
      ];
      const acc = new Map(targets.map((t) => [t.label, { label: t.label, runs: [] as number[], seconds: 0, cpu: { client: 0, gateway: 0, artifacts: 0, nginx: 0 } }]));
      log(`large: one warm-up download of 256 MiB per target, then ${LARGE_RUNS} rounds`);
      for (const t of targets) await t.run(procs());
      for (let round = 0; round < LARGE_RUNS; round++) {
        for (const t of targets) {
          const r = await t.run(procs());
          if (!r) continue;
          const a = acc.get(t.label)!;
          a.runs.push(r.mbps);
          a.seconds += r.seconds;
          a.cpu = { client: a.cpu.client + r.cpu.client, gateway: a.cpu.gateway + r.cpu.gateway, artifacts: a.cpu.artifacts + r.cpu.artifacts, nginx: a.cpu.nginx + r.cpu.nginx };
        }
      }
      for (const a of acc.values()) if (a.runs.length) large.push({ ...a, mbps: (a.runs.length * LARGE_SIZE) / a.seconds / 1e6 });
    }

    // ---- report
    const cpuModel = cpus()[0]?.model ?? "unknown CPU";
    console.log("");
    console.log(`Gateway benchmark — node ${process.version}, ${cpus().length} cores (${cpuModel})`);
    console.log(`Client, gateway, artifacts service (and nginx) share these cores.${PROFILE ? " The gateway's small-file runs were made under --cpu-prof." : ""}`);
    console.log(`Gateway rate limit: ${RATE_LIMIT === 0 ? "off (--rate-limit=0)" : `${RATE_LIMIT} requests/minute per tenant (on, never reached: every request is still decided in Redis)`}.`);
    console.log(`Goals: gateway >= ${GOAL_SMALL * 100}% of direct on 1 KiB GETs (req/s), >= ${GOAL_LARGE * 100}% on 256 MiB GETs (MB/s).`);
    if (!nginxBin) console.log(NGINX ? "nginx: not installed (apt-get install -y nginx), its rows are left out." : "nginx: skipped (--no-nginx).");

    const byLabel = <T extends { label: string }>(rows: T[], l: string) => rows.find((r) => r.label === l);
    const sd = byLabel(small, "direct");
    if (small.length) {
      console.log("");
      console.log(`1 KiB GET, ${CONNECTIONS} connections, ${ROUNDS} round(s) of ${DURATION} s per target taken in turns, after a ${WARMUP} s warm-up (autocannon)`);
      console.log(
        table(
          ["target", "req/s", "rounds req/s", "p50 ms", "p99 ms", "vs direct", "2xx", "non-2xx", "errors", "CPU% client", "CPU% gateway", "CPU% artifacts", "CPU% nginx"],
          small.map((r) => [
            r.label,
            fmt(r.rps),
            r.rounds.map((x) => fmt(x.rps)).join(" / "),
            fmt(r.rounds.reduce((a, x) => a + x.p50, 0) / r.rounds.length, 1),
            fmt(Math.max(...r.rounds.map((x) => x.p99)), 1),
            sd ? pct(r.rps / sd.rps) : "-",
            r.ok,
            r.rounds.reduce((a, x) => a + x.non2xx, 0),
            r.rounds.reduce((a, x) => a + x.errors, 0),
            fmt((r.cpu.client / (r.seconds * 1000)) * 100),
            fmt((r.cpu.gateway / (r.seconds * 1000)) * 100),
            fmt((r.cpu.artifacts / (r.seconds * 1000)) * 100),
            fmt((r.cpu.nginx / (r.seconds * 1000)) * 100),
          ]),
        ),
      );
      console.log("(req/s: all rounds together; p50: mean of the rounds; p99: the worst round)");
      console.log("");
      console.log("CPU per request (µs)");
      console.log(
        table(
          ["target", "client", "gateway", "artifacts", "nginx", "total"],
          small.map((r) => {
            const per = (ms: number) => (r.ok > 0 ? (ms * 1000) / r.ok : NaN);
            const c = r.cpu;
            return [r.label, fmt(per(c.client)), fmt(per(c.gateway)), fmt(per(c.artifacts)), fmt(per(c.nginx)), fmt(per(c.client + c.gateway + c.artifacts + c.nginx))];
          }),
        ),
      );
      const sg = byLabel(small, "gateway");
      const smallRatio = sg && sd ? sg.rps / sd.rps : NaN;
      console.log("");
      console.log(`small files: gateway/direct = ${pct(smallRatio)} (goal >= ${GOAL_SMALL * 100}%: ${smallRatio >= GOAL_SMALL ? "met" : "not met"})`);
      const sn = byLabel(small, "nginx");
      if (sn && sd) console.log(`             nginx/direct   = ${pct(sn.rps / sd.rps)}`);
      const su = byLabel(small, "gateway, no limit");
      if (su && sg) {
        const cost = 1 - sg.rps / su.rps;
        const cpuPerReq = (r: typeof sg) => (r.ok > 0 ? (r.cpu.gateway * 1000) / r.ok : NaN);
        const cpuCost = cpuPerReq(sg) / cpuPerReq(su) - 1;
        console.log(`rate limit:  gateway with the limit ${fmt(sg.rps)} req/s, without ${fmt(su.rps)} req/s: costs ${pct(cost)} of throughput (goal < 10%: ${cost < 0.1 ? "met" : "not met"})`);
        console.log(`             gateway CPU per request ${fmt(cpuPerReq(sg))} µs with the limit, ${fmt(cpuPerReq(su))} µs without: ${cpuCost >= 0 ? "+" : ""}${pct(cpuCost)} (steadier than req/s on a shared VM)`);
    }

    }

    if (large.length) {
      const ld = byLabel(large, "direct");
      console.log("");
      console.log(`256 MiB GET, ${LARGE_RUNS} downloads per target taken in turns after a warm-up download each, body discarded (MB = 10^6 bytes)`);
      console.log(
        table(
          ["target", "MB/s", "runs MB/s", "vs direct", "CPU% client", "CPU% gateway", "CPU% artifacts", "CPU% nginx"],
          large.map((r) => [
            r.label,
            fmt(r.mbps),
            r.runs.map((x) => fmt(x)).join(" / "),
            ld ? pct(r.mbps / ld.mbps) : "-",
            fmt((r.cpu.client / (r.seconds * 1000)) * 100),
            fmt((r.cpu.gateway / (r.seconds * 1000)) * 100),
            fmt((r.cpu.artifacts / (r.seconds * 1000)) * 100),
            fmt((r.cpu.nginx / (r.seconds * 1000)) * 100),
          ]),
        ),
      );
      console.log("");
      console.log("CPU per MB (ms)");
      console.log(
        table(
          ["target", "client", "gateway", "artifacts", "nginx", "total"],
          large.map((r) => {
            const mb = (r.runs.length * LARGE_SIZE) / 1e6;
            const c = r.cpu;
            return [r.label, fmt(c.client / mb, 2), fmt(c.gateway / mb, 2), fmt(c.artifacts / mb, 2), fmt(c.nginx / mb, 2), fmt((c.client + c.gateway + c.artifacts + c.nginx) / mb, 2)];
          }),
        ),
      );
      const lg = byLabel(large, "gateway");
      const largeRatio = lg && ld ? lg.mbps / ld.mbps : NaN;
      console.log("");
      console.log(`large files: gateway/direct = ${pct(largeRatio)} (goal >= ${GOAL_LARGE * 100}%: ${largeRatio >= GOAL_LARGE ? "met" : "not met"})`);
      const ln = byLabel(large, "nginx");
      if (ln && ld) console.log(`             nginx/direct   = ${pct(ln.mbps / ld.mbps)}`);
    }

    if (PROFILE) {
      console.log("");
      if (!profileFile) {
        console.log(`profile: no .cpuprofile was written to ${profileDir}`);
      } else {
        const p = summariseProfile(profileFile, repoRoot, 25);
        console.log(`Gateway CPU profile (${profileFile}): ${fmt(p.busyMs)} ms busy, ${fmt(p.idleMs)} ms idle`);
        console.log("Top 25 functions by self time (share of busy time)");
        console.log(table(["self ms", "share", "function url:line"], p.rows.map((r) => [fmt(r.selfMs, 1), pct(r.share), r.name])));
      }
    }
    console.log("");
  } finally {
    if (nginx) await nginx.stop().catch(() => {});
    for (const c of cleanups.reverse()) await c().catch((err) => log(`cleanup: ${(err as Error).message}`));
    await dispatcher.close().catch(() => {});
    rmSync(suiteDir, { recursive: true, force: true });
    process.removeListener("SIGINT", onSignal);
    process.removeListener("SIGTERM", onSignal);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
