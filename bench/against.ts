// `npm run bench -- --against=<checkout>`: this checkout's services and another checkout's (an
// earlier commit in a git worktree, its packages installed) side by side on this machine, each
// with its own Postgres, Redis, NATS and npm repository, taking turns: sequential npm publishes
// in runs of 10, then sequential GETs of their tarballs and documents in runs of 50, then the
// documents again paced as `npm install` fetches them (one at a time, npm's own work between
// them, about 8 ms here: each process in the chain is woken from idle per request). A change's
// effect of a few per cent shows here, where two runs of the whole bench an hour apart differ
// by more than that on a shared VM. Figures are printed, never asserted. See bench/README.md.
import { mkdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Infra } from "@svc/devstack";
import type { RunningServices, ServiceName } from "@svc/devstack/service-runner";
import { startBenchSuite } from "./bench-suite.js";
import { INSTALL_ACCEPT, NPM_SUITE_ENV, npmRepository } from "./npm-measure.js";
import { closeNpmAgent, publish, publishDoc, timedGet } from "./npm-packages.js";
import { collectProfile, summariseProfile } from "./cpuprofile.js";
import { cpuMs } from "./procstat.js";
import { closeScaleAgent } from "./scale-client.js";
import { AGAINST, dataDir, log, NPM_SIZES, PROFILE_SERVICE, profileDir, repoRoot, suiteDir } from "./options.js";

const SERVICES = ["gateway", "artifacts", "notifier"] as const;
const SERVERS = ["postgres", "redis"] as const;
/** What `npm install` does between one document and the next here (9-11 ms a document in all; see docs/internals/performance.md). */
const NPM_PACE_MS = 8;
/** npm 11's Accept when it installs: the full document (it asks for the abbreviated one only with fullMetadata off). */
const FULL_ACCEPT = "application/json";

interface Target {
  label: string;
  s: RunningServices;
  infra: Infra;
  registry: string;
  key: string;
  /** Read by the suite at every launch of a service: the profile pass adds --cpu-prof here. */
  nodeArgs: Partial<Record<ServiceName, string[]>>;
}

export async function runAgainst(): Promise<void> {
  const other = resolve(AGAINST!);
  const count = NPM_SIZES.packages;
  const cleanups: Array<() => Promise<unknown>> = [];
  try {
    // The other checkout's own bench code starts its own services, under its own .data/bench.
    const { startBenchSuite: startOther } = (await import(join(other, "bench", "bench-suite.ts"))) as typeof import("./bench-suite.js");
    mkdirSync(dataDir, { recursive: true });
    for (const d of [suiteDir, join(other, ".data", "bench", "suite")]) rmSync(d, { recursive: true, force: true });
    const otherArgs: Target["nodeArgs"] = {};
    const thisArgs: Target["nodeArgs"] = {};
    const suites = [
      { label: `other (${other})`, nodeArgs: otherArgs, ...(await startOther(cleanups, otherArgs, NPM_SUITE_ENV)) },
      { label: "this checkout", nodeArgs: thisArgs, ...(await startBenchSuite(cleanups, thisArgs, NPM_SUITE_ENV)) },
    ];
    const targets: Target[] = [];
    for (const { label, suite: s, infra, nodeArgs } of suites) {
      const { registry, key } = await npmRepository(s);
      for (let i = 0; i < 50; i++) await publish(registry, key, publishDoc(registry, `warm-${i}`, "1.0.0"));
      targets.push({ label, s, infra, registry, key, nodeArgs });
    }
    const cpu = (t: Target) => [...SERVICES.map((n) => cpuMs(t.s.pid(n) ?? 0)), ...SERVERS.map((n) => cpuMs(t.infra.pids()[n] ?? 0))];
    /** `step` may answer the milliseconds to count (a paced GET's, without its pause); else its whole time counts. */
    const inTurns = async (what: string, run: number, step: (t: Target, i: number) => Promise<number | void>) => {
      log(`${what}: ${count} one after another on each, in turns of ${run}`);
      const ms = targets.map(() => 0);
      const before = targets.map(cpu);
      for (let from = 0, turn = 0; from < count; from += run, turn++) {
        for (const k of turn % 2 === 0 ? [0, 1] : [1, 0]) {
          for (let i = from; i < Math.min(from + run, count); i++) {
            const t0 = performance.now();
            const counted = await step(targets[k]!, i);
            ms[k]! += typeof counted === "number" ? counted : performance.now() - t0;
          }
        }
      }
      const rows = targets.map((t, k) => {
        const used = cpu(t).map((c, j) => (c - before[k]![j]!) / count);
        return `  ${t.label.padEnd(Math.max(...targets.map((x) => x.label.length)))}  ${(ms[k]! / count).toFixed(2)} ms each; CPU each: ${[...SERVICES, ...SERVERS].map((n, j) => `${n} ${(used[j]! * 1000).toFixed(0)} µs`).join(", ")}`;
      });
      console.log(`\n${what}\n${rows.join("\n")}\n  this / other: x${(ms[1]! / ms[0]!).toFixed(3)}`);
    };
    /** The time of the GET alone (a paced step's pause is not counted). */
    const get = async (url: string, key: string, accept: string, pauseMs = 0) => {
      const r = await timedGet(url, { authorization: `Bearer ${key}`, accept });
      if (r.status !== 200) throw new Error(`GET ${url} answered ${r.status}`);
      if (pauseMs > 0) await new Promise((done) => setTimeout(done, pauseMs));
      return r.ms;
    };
    await inTurns("npm publishes", 10, (t, i) => publish(t.registry, t.key, publishDoc(t.registry, `dep-${i}`, "1.0.0")));
    await inTurns("tarball GETs", 50, async (t, i) => void (await get(`${t.registry}dep-${i}/-/dep-${i}-1.0.0.tgz`, t.key, "*/*")));
    await inTurns("document GETs (abbreviated)", 50, async (t, i) => void (await get(`${t.registry}dep-${i}`, t.key, INSTALL_ACCEPT)));
    await inTurns(`document GETs (full) paced as npm install: ${NPM_PACE_MS} ms after each`, 50, (t, i) => get(`${t.registry}dep-${i}`, t.key, FULL_ACCEPT, NPM_PACE_MS));
    if (PROFILE_SERVICE) await profileAbbreviated(targets, PROFILE_SERVICE, count, (t, i) => get(`${t.registry}dep-${i}`, t.key, INSTALL_ACCEPT));
  } finally {
    for (const c of cleanups.reverse()) await c().catch((err) => log(`cleanup: ${(err as Error).message}`));
    await closeNpmAgent().catch(() => {});
    await closeScaleAgent().catch(() => {});
  }
}

/**
 * `--profile[=service]`, after the timed steps (so they run unprofiled): that service of each
 * suite restarts under --cpu-prof, answers the abbreviated documents twice (in turns as above;
 * the first pass warms the restarted service up), stops to write its profile and starts again
 * without. Only the second pass's samples are counted (V8 stamps them with the monotonic clock
 * process.hrtime reads). Prints each side's busy CPU per document and the functions
 * whose self time differs most between the two, by function name (the two bundles' lines differ).
 */
async function profileAbbreviated(targets: Target[], service: ServiceName, count: number, get: (t: Target, i: number) => Promise<number>): Promise<void> {
  const dirs = targets.map((_, k) => join(profileDir, `against-${k === 0 ? "other" : "this"}`));
  for (const [k, t] of targets.entries()) {
    rmSync(dirs[k]!, { recursive: true, force: true });
    mkdirSync(dirs[k]!, { recursive: true });
    log(`${t.label}: restarting ${service} under --cpu-prof`);
    // One sample every 100 µs (the default is 1 ms): a document takes a few milliseconds.
    t.nodeArgs[service] = ["--cpu-prof", "--cpu-prof-interval=100", `--cpu-prof-dir=${dirs[k]}`];
    await t.s.stopService(service, "SIGTERM");
    await t.s.startService(service);
  }
  log(`profile: ${count} abbreviated documents twice on each, in turns of 50 (the first pass warms up)`);
  const nowUs = () => Number(process.hrtime.bigint() / 1000n);
  let window = { fromUs: 0, toUs: 0 };
  for (let pass = 0; pass < 2; pass++) {
    const fromUs = nowUs();
    for (let from = 0, turn = 0; from < count; from += 50, turn++) {
      for (const k of turn % 2 === 0 ? [0, 1] : [1, 0]) for (let i = from; i < Math.min(from + 50, count); i++) await get(targets[k]!, i);
    }
    window = { fromUs, toUs: nowUs() };
  }
  const perName: Array<Map<string, number>> = [];
  const lines: string[] = [];
  for (const [k, t] of targets.entries()) {
    const file = await collectProfile(t.s, service, t.nodeArgs, dirs[k]!);
    if (!file) {
      console.log(`\n${t.label}: no .cpuprofile was written to ${dirs[k]}`);
      return;
    }
    const p = summariseProfile(file, repoRoot, 100_000, window);
    const names = new Map<string, number>();
    // A row's name is "function url:line"; the function's name alone is what both bundles share.
    for (const r of p.rows) {
      const fn = r.name.includes(" ") ? r.name.slice(0, r.name.lastIndexOf(" ")) : r.name;
      names.set(fn, (names.get(fn) ?? 0) + (r.selfMs * 1000) / count);
    }
    perName.push(names);
    lines.push(`  ${t.label}: ${((p.busyMs * 1000) / count).toFixed(0)} µs busy per document in the second pass (${file})`);
  }
  const all = new Set([...perName[0]!.keys(), ...perName[1]!.keys()]);
  const rows = [...all]
    .map((fn) => ({ fn, other: perName[0]!.get(fn) ?? 0, mine: perName[1]!.get(fn) ?? 0 }))
    .sort((a, b) => Math.abs(b.mine - b.other) - Math.abs(a.mine - a.other))
    .slice(0, 20);
  console.log(`\n${service} service profile, abbreviated documents\n${lines.join("\n")}`);
  console.log("  self µs per document, other / this, the 20 largest differences:");
  for (const r of rows) console.log(`  ${r.other.toFixed(1).padStart(8)} ${r.mine.toFixed(1).padStart(8)}  ${r.fn}`);
}
