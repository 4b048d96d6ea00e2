// The npm bench's measurements, each made the same way against the suite and Verdaccio: request
// rates (autocannon), one large document under concurrent requests, publishes one after another,
// and a cold `npm install` with the machine's npm.
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import autocannon from "autocannon";
import { request } from "undici";
import type { RunningServices } from "@svc/devstack/service-runner";
import { publish, publishDoc, timedGet } from "./npm-packages.js";
import { CONNECTIONS, DURATION, log, WARMUP } from "./options.js";
import { cpuMs } from "./procstat.js";
import { apiClient, quantile } from "./scale-client.js";

/** One registry under test: its URL (trailing slash), a token as npm sends it, its processes. */
export interface NpmTarget {
  label: string;
  registry: string;
  token: string;
  pids: () => number[];
}

/** What npm sends when it installs (the abbreviated document, when the registry has one). */
export const INSTALL_ACCEPT = "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*";
/**
 * What npm, pnpm and yarn send in Accept-Encoding (npm's fetch: `gzip,deflate`). The bursts send
 * it to both registries, so each answers the large document as it would answer npm: the suite
 * gzipped once per change, Verdaccio compressing it per request. Their figures are to the last
 * byte on the wire, without the client's inflate (the same for both). The rates do not send it:
 * autocannon reads some answers pathologically slowly (a plain Node server answering 54 KB:
 * about 770 req/s to autocannon, 9,000 to undici, here), and a 160 KB document gzipped to 54 KB
 * fell into that; identity answers are what earlier sessions measured.
 */
export const NPM_ACCEPT_ENCODING = "gzip,deflate";
/**
 * npm cannot send Service-Repository-Name: its key is granted the npm repository only, as
 * docs/integration/npm.md advises, with the setting that authorises by the path.
 */
export const NPM_SUITE_ENV = { SVC_REPOSITORY_SCOPE_FROM_PATH: "true" };

/** A repository `npm` on a suite and a key granted `deploy` on it alone; its registry URL and the key. */
export async function npmRepository(s: RunningServices): Promise<{ registry: string; key: string }> {
  const api = apiClient(s.gatewayUrl, s.bootstrapKey);
  await api("POST", "/api/repositories", { name: "npm", format: "npm" });
  const minted = (await api<{ id: string; key: string }>("POST", "/api/credentials", { label: "bench-npm" })).json;
  await api("POST", `/api/credentials/${minted.id}/grants`, { scope: "npm", tokens: ["deploy"] });
  return { registry: `${s.gatewayUrl}/repository/npm/`, key: minted.key };
}

const auth = (t: NpmTarget) => ({ authorization: `Bearer ${t.token}` });
const serverCpu = (t: NpmTarget) => t.pids().reduce((a, pid) => a + cpuMs(pid), 0);

export interface RateRound {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  /** Server CPU (every process of the target) per answered request, in µs. */
  cpuUs: number;
}

/** One measured autocannon run of GETs of `path` (a warm-up first when `warm`). */
export async function rateRound(t: NpmTarget, what: string, path: string, accept: string | undefined, warm: boolean): Promise<RateRound> {
  const headers = { ...auth(t), ...(accept ? { accept } : {}) };
  const url = t.registry + path;
  if (warm) await autocannon({ url, connections: CONNECTIONS, duration: WARMUP, headers });
  log(`npm: ${what}: ${t.label}, ${DURATION} s, ${CONNECTIONS} connections`);
  const before = serverCpu(t);
  const r = await autocannon({ url, connections: CONNECTIONS, duration: DURATION, headers });
  const cpu = serverCpu(t) - before;
  return { rps: r["2xx"] / r.duration, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx + r.errors, cpuUs: r["2xx"] > 0 ? (cpu * 1000) / r["2xx"] : NaN };
}

export interface Burst {
  /** A request made alone (median of 5), ms. */
  alone: number;
  p50: number;
  p99: number;
  max: number;
  bytes: number;
}

/** `bursts` times, `concurrency` GETs of one document started together; latency of each. */
export async function concurrentDocument(t: NpmTarget, path: string, accept: string | undefined, concurrency: number, bursts: number): Promise<Burst> {
  const headers = { ...auth(t), "accept-encoding": NPM_ACCEPT_ENCODING, ...(accept ? { accept } : {}) };
  const url = t.registry + path;
  const first = await timedGet(url, headers);
  if (first.status !== 200) throw new Error(`GET ${url} answered ${first.status}`);
  const alone: number[] = [];
  for (let i = 0; i < 5; i++) alone.push((await timedGet(url, headers)).ms);
  const times: number[] = [];
  for (let b = 0; b < bursts; b++) {
    const answers = await Promise.all(Array.from({ length: concurrency }, () => timedGet(url, headers)));
    for (const a of answers) {
      if (a.status !== 200) throw new Error(`GET ${url} answered ${a.status} under load`);
      times.push(a.ms);
    }
  }
  return { alone: quantile(alone, 0.5), p50: quantile(times, 0.5), p99: quantile(times, 0.99), max: Math.max(...times), bytes: first.bytes };
}

/** Publishes `count` documents made by `doc(i)` with `concurrency` in flight; seconds taken and server CPU per publish (ms). */
export async function publishMany(t: NpmTarget, count: number, concurrency: number, doc: (registry: string, i: number) => ReturnType<typeof publishDoc>): Promise<{ seconds: number; cpuMs: number }> {
  const cpu0 = serverCpu(t);
  const t0 = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      await publish(t.registry, t.token, doc(t.registry, i));
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return { seconds: (performance.now() - t0) / 1000, cpuMs: (serverCpu(t) - cpu0) / count };
}

/**
 * Publishes `count` documents one after another to each target, the targets taking turns in
 * runs of TURN publishes (the order swapped every other run), so a slow spell of the machine
 * lands on all of them alike, while what a publish leaves running after its answer (events,
 * flushes) still meets the target's own next publish, as it does for a user publishing one
 * package after another; per target, the seconds its runs took and its server CPU per publish (ms).
 */
export async function publishInTurns(targets: NpmTarget[], count: number, doc: (registry: string, i: number) => ReturnType<typeof publishDoc>): Promise<Map<string, { seconds: number; cpuMs: number }>> {
  const TURN = 10;
  const spent = new Map(targets.map((t) => [t.label, 0]));
  const cpu0 = new Map(targets.map((t) => [t.label, serverCpu(t)]));
  for (let from = 0, run = 0; from < count; from += TURN, run++) {
    for (const t of run % 2 === 0 ? targets : [...targets].reverse()) {
      const docs = Array.from({ length: Math.min(TURN, count - from) }, (_, k) => doc(t.registry, from + k));
      const t0 = performance.now();
      for (const d of docs) await publish(t.registry, t.token, d);
      spent.set(t.label, spent.get(t.label)! + performance.now() - t0);
    }
  }
  return new Map(targets.map((t) => [t.label, { seconds: spent.get(t.label)! / 1000, cpuMs: (serverCpu(t) - cpu0.get(t.label)!) / count }]));
}

function run(cmd: string, args: string[], cwd: string, env: Record<string, string>): Promise<{ code: number; output: string }> {
  return new Promise((done) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    const keep = (d: Buffer) => (output = (output + d.toString()).slice(-6000));
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    child.on("close", (code) => done({ code: code ?? 1, output }));
  });
}

/**
 * A cold `npm install` (fresh cache, fresh .npmrc, no lock file, no node_modules) of a project
 * depending on `deps`; wall seconds. Only PATH is kept from the environment.
 */
export async function coldInstall(t: NpmTarget, dir: string, deps: Record<string, string>): Promise<number> {
  rmSync(dir, { recursive: true, force: true });
  const project = join(dir, "project");
  mkdirSync(join(dir, "home"), { recursive: true });
  mkdirSync(project, { recursive: true });
  const host = t.registry.replace(/^https?:/, "");
  writeFileSync(join(dir, "npmrc"), `registry=${t.registry}\n${host}:_authToken=${t.token}\n`);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "bench-consumer", version: "1.0.0", private: true, dependencies: deps }));
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: join(dir, "home"),
    npm_config_userconfig: join(dir, "npmrc"),
    npm_config_globalconfig: join(dir, "npmrc-global"),
    npm_config_cache: join(dir, "cache"),
    npm_config_update_notifier: "false",
  };
  log(`npm: cold install of ${Object.keys(deps).length} packages from ${t.label}`);
  const t0 = performance.now();
  const r = await run("npm", ["install", "--no-audit", "--no-fund", "--no-package-lock", "--ignore-scripts", "--loglevel=error"], project, env);
  const seconds = (performance.now() - t0) / 1000;
  if (r.code !== 0) throw new Error(`npm install from ${t.label} failed (${r.code}):\n${r.output}`);
  rmSync(dir, { recursive: true, force: true });
  return seconds;
}

/**
 * A registry answering from memory in a few lines: the documents and tarballs of `names` copied
 * from `source` (tarball URLs pointed at itself), served by a bare Node server in this process,
 * which is idle while npm installs. An install from it is what npm takes with a registry that
 * costs almost nothing: the floor under any registry's install on this machine.
 */
export async function memoryRegistry(source: NpmTarget, names: string[], port: number): Promise<NpmTarget & { close: () => Promise<void> }> {
  const registry = `http://127.0.0.1:${port}/`;
  const files = new Map<string, { type: string; body: Buffer }>();
  const headers = { authorization: `Bearer ${source.token}` };
  for (const name of names) {
    const doc = JSON.parse((await fetchBytes(source.registry + name, { ...headers, accept: "application/json" })).toString("utf8")) as { versions: Record<string, { dist: { tarball: string } }> };
    for (const v of Object.values(doc.versions)) {
      const path = new URL(v.dist.tarball).pathname.slice(new URL(source.registry).pathname.length - 1);
      files.set(path, { type: "application/octet-stream", body: await fetchBytes(v.dist.tarball, headers) });
      v.dist.tarball = registry.slice(0, -1) + path;
    }
    files.set(`/${name}`, { type: "application/json", body: Buffer.from(JSON.stringify(doc)) });
  }
  const server = createServer((req, res) => {
    const f = files.get(req.url ?? "");
    if (!f) res.writeHead(404, { "content-type": "application/json" }).end('{"error":"not found"}');
    else res.writeHead(200, { "content-type": f.type, "content-length": f.body.length }).end(f.body);
  });
  await new Promise<void>((done) => server.listen(port, "127.0.0.1", done));
  return { label: "memory", registry, token: "none", pids: () => [], close: () => new Promise((done) => server.close(() => done())) };
}

async function fetchBytes(url: string, headers: Record<string, string>): Promise<Buffer> {
  const res = await request(url, { headers });
  const body = Buffer.from(await res.body.arrayBuffer());
  if (res.statusCode !== 200) throw new Error(`GET ${url} answered ${res.statusCode}`);
  return body;
}

/** Two-sided 95 % quantiles of Student's t for 1 to 30 degrees of freedom (beyond: 1.96). */
const T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042];

/**
 * The ratio a/b of paired measurements (a[i] and b[i] taken one after the other): the geometric
 * mean of the per-pair ratios and its 95 % confidence interval (Student's t on their logarithms).
 * Pairs share the machine's slow and fast spells, which move a single install by more than the
 * difference sought. Undefined with fewer than two pairs.
 */
export function pairedRatio(a: number[], b: number[]): { ratio: number; low: number; high: number } | undefined {
  const logs = a.map((x, i) => Math.log(x / b[i]!)).filter(Number.isFinite);
  const n = logs.length;
  if (n < 2) return undefined;
  const mean = logs.reduce((s, x) => s + x, 0) / n;
  const sd = Math.sqrt(logs.reduce((s, x) => s + (x - mean) ** 2, 0) / (n - 1));
  const half = (T975[n - 2] ?? 1.96) * (sd / Math.sqrt(n));
  return { ratio: Math.exp(mean), low: Math.exp(mean - half), high: Math.exp(mean + half) };
}
