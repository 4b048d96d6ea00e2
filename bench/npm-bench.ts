// `npm run bench -- --npm`: an npm repository of the suite (through the gateway, with a minted
// key) side by side with Verdaccio (bench/verdaccio.ts), in one run on this machine, the same
// packages published to both. Figures are printed with the ratios suite/Verdaccio, never
// asserted. See bench/README.md ("npm against Verdaccio").
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "@svc/devstack";
import type { ServiceName } from "@svc/devstack/service-runner";
import { collectProfile, summariseProfile } from "./cpuprofile.js";
import { startBenchSuite } from "./bench-suite.js";
import { coldInstall, concurrentDocument, INSTALL_ACCEPT, memoryRegistry, NPM_SUITE_ENV, npmRepository, pairedRatio, publishInTurns, publishMany, rateRound, type Burst, type NpmTarget, type RateRound } from "./npm-measure.js";
import { closeNpmAgent, publishDoc } from "./npm-packages.js";
import { closeScaleAgent } from "./scale-client.js";
import { dataDir, log, NPM_SIZES, npmDir, PROFILE, profileDir, repoRoot, ROUNDS, suiteDir, toolsDir } from "./options.js";
import { ensureVerdaccio, startVerdaccio, VERDACCIO_VERSION } from "./verdaccio.js";

const MEDIUM = "bench-versions";
const BIG = "bench-big";
const dep = (i: number) => `bench-dep-${String(i).padStart(3, "0")}`;

interface TargetFigures {
  publishSeconds: number;
  /** Server CPU per publish (every process of the target), ms. */
  publishCpuMs: number;
  rates: Record<string, RateRound[]>;
  bursts: Record<string, Burst>;
  installs: number[];
  setup: { medium: number; big: number };
}

const RATES = [
  { what: "metadata, install (abbreviated)", path: MEDIUM, accept: INSTALL_ACCEPT },
  { what: "metadata, full document", path: MEDIUM, accept: "application/json" },
  { what: "tarball", path: `${MEDIUM}/-/${MEDIUM}-1.${Math.floor(NPM_SIZES.versions / 2)}.0.tgz`, accept: undefined },
];
const BURSTS = [
  { what: "full document", accept: "application/json" },
  { what: "install (abbreviated)", accept: INSTALL_ACCEPT },
];

export async function runNpm(): Promise<void> {
  const cleanups: Array<() => Promise<unknown>> = [];
  const nodeArgs: Partial<Record<ServiceName, string[]>> = {};
  try {
    for (const d of [suiteDir, npmDir, profileDir]) rmSync(d, { recursive: true, force: true });
    mkdirSync(dataDir, { recursive: true });
    const verdaccioBin = ensureVerdaccio(toolsDir);
    const s = (await startBenchSuite(cleanups, nodeArgs, NPM_SUITE_ENV)).suite;
    const npm = await npmRepository(s);

    log(`starting verdaccio ${VERDACCIO_VERSION} (JWT tokens)`);
    const v = await startVerdaccio(verdaccioBin, join(npmDir, "verdaccio"), await freePort());
    cleanups.push(() => v.stop());

    const targets: NpmTarget[] = [
      { label: "suite", registry: npm.registry, token: npm.key, pids: () => [s.pid("gateway") ?? 0, s.pid("artifacts") ?? 0] },
      { label: "verdaccio", registry: v.registry, token: v.token, pids: () => [v.pid] },
    ];
    const figures = new Map<string, TargetFigures>();
    for (const t of targets) {
      // Set-up, timed for information: versions of one package, several publishes in flight on
      // the suite (publishes of one package may run at once there), one at a time on Verdaccio.
      const inFlight = t.label === "suite" ? 4 : 1;
      log(`npm: ${t.label}: publishing ${NPM_SIZES.versions} versions of ${MEDIUM} and ${NPM_SIZES.bigVersions} of ${BIG} (set-up)`);
      const medium = (await publishMany(t, NPM_SIZES.versions, inFlight, (r, i) => publishDoc(r, MEDIUM, `1.${i}.0`))).seconds;
      const big = (await publishMany(t, NPM_SIZES.bigVersions, inFlight, (r, i) => publishDoc(r, BIG, `1.${i}.0`, { big: true }))).seconds;
      figures.set(t.label, { publishSeconds: NaN, publishCpuMs: NaN, rates: {}, bursts: {}, installs: [], setup: { medium, big } });
    }
    log(`npm: publishing ${NPM_SIZES.packages} packages one after another to each, taking turns`);
    for (const [label, one] of await publishInTurns(targets, NPM_SIZES.packages, (r, i) => publishDoc(r, dep(i), "1.0.0"))) {
      Object.assign(figures.get(label)!, { publishSeconds: one.seconds, publishCpuMs: one.cpuMs });
    }

    if (PROFILE) {
      log("restarting the artifacts service under --cpu-prof for the reads");
      mkdirSync(profileDir, { recursive: true });
      nodeArgs.artifacts = ["--cpu-prof", `--cpu-prof-dir=${profileDir}`];
      await s.stopService("artifacts", "SIGTERM");
      await s.startService("artifacts");
    }
    // Targets take turns within each round: a slow spell of the machine lands on both.
    for (let round = 0; round < ROUNDS; round++) {
      for (const r of RATES) {
        for (const t of targets) (figures.get(t.label)!.rates[r.what] ??= []).push(await rateRound(t, r.what, r.path, r.accept, round === 0));
      }
    }
    for (const b of BURSTS) {
      for (const t of targets) {
        log(`npm: ${t.label}: ${b.what} of ${BIG}, ${NPM_SIZES.burst} requests at once`);
        figures.get(t.label)!.bursts[b.what] = await concurrentDocument(t, BIG, b.accept, NPM_SIZES.burst, 5);
      }
    }
    let profileFile: string | undefined;
    if (PROFILE) {
      profileFile = await collectProfile(s, "artifacts", nodeArgs, profileDir);
    }

    const names = Array.from({ length: NPM_SIZES.packages }, (_, i) => dep(i));
    const deps = Object.fromEntries(names.map((n) => [n, "^1.0.0"]));
    log("npm: copying the packages into a registry answering from memory (the floor of an install)");
    const memory = await memoryRegistry(targets[0]!, names, await freePort());
    cleanups.push(() => memory.close());
    const floor: number[] = [];
    // Each round installs from the suite and Verdaccio one right after the other (in turns, so
    // neither always goes first), the floor before or after them.
    for (let i = 0; i < NPM_SIZES.installs; i++) {
      const pair = i % 2 === 0 ? targets : [...targets].reverse();
      for (const t of i % 4 < 2 ? [memory, ...pair] : [...pair, memory]) {
        const seconds = await coldInstall(t, join(npmDir, `install-${t.label}`), deps);
        if (t === memory) floor.push(seconds);
        else figures.get(t.label)!.installs.push(seconds);
      }
    }
    printNpm(figures.get("suite")!, figures.get("verdaccio")!, floor, profileFile);
  } finally {
    for (const c of cleanups.reverse()) await c().catch((err) => log(`cleanup: ${(err as Error).message}`));
    await closeNpmAgent().catch(() => {});
    await closeScaleAgent().catch(() => {});
    rmSync(suiteDir, { recursive: true, force: true });
    rmSync(npmDir, { recursive: true, force: true });
  }
}

const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const n0 = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "-");
const ms = (x: number) => (x < 10 ? `${x.toFixed(1)} ms` : `${Math.round(x)} ms`);
const sec = (x: number) => `${x.toFixed(1)} s`;

function printNpm(a: TargetFigures, b: TargetFigures, floor: number[], profileFile: string | undefined): void {
  type Row = [label: string, suite: string, verdaccio: string, ratio: string, goal: string];
  const ratio = (x: number, y: number) => (y > 0 && Number.isFinite(x) ? `x${(x / y).toFixed(2)}` : "-");
  const rows: Row[] = [];
  for (const r of RATES) {
    const [ra, rb] = [a.rates[r.what]!, b.rates[r.what]!];
    const [x, y] = [avg(ra.map((q) => q.rps)), avg(rb.map((q) => q.rps))];
    const failed = (q: RateRound[]) => (q.some((z) => z.non2xx > 0) ? ` (${q.reduce((s, z) => s + z.non2xx, 0)} failed)` : "");
    rows.push([`${r.what} (req/s, ${r.path === MEDIUM ? `${NPM_SIZES.versions} versions` : "1 file"})`, n0(x) + failed(ra), n0(y) + failed(rb), ratio(x, y), "x2 or more"]);
    rows.push([`  p50 / p99 latency`, `${ra.map((q) => q.p50).join("/")} / ${ra.map((q) => q.p99).join("/")} ms`, `${rb.map((q) => q.p50).join("/")} / ${rb.map((q) => q.p99).join("/")} ms`, "", ""]);
    rows.push([`  server CPU per request`, `${n0(avg(ra.map((q) => q.cpuUs)))} µs`, `${n0(avg(rb.map((q) => q.cpuUs)))} µs`, ratio(avg(ra.map((q) => q.cpuUs)), avg(rb.map((q) => q.cpuUs))), ""]);
  }
  for (const w of BURSTS) {
    const [x, y] = [a.bursts[w.what]!, b.bursts[w.what]!];
    rows.push([`${NPM_SIZES.bigVersions} versions, ${w.what} (${(x.bytes / 1e6).toFixed(1)} / ${(y.bytes / 1e6).toFixed(1)} MB on the wire)`, "", "", "", ""]);
    rows.push(["  alone (median of 5)", ms(x.alone), ms(y.alone), ratio(x.alone, y.alone), ""]);
    rows.push([`  ${NPM_SIZES.burst} at once: p50`, ms(x.p50), ms(y.p50), ratio(x.p50, y.p50), ""]);
    rows.push([`  ${NPM_SIZES.burst} at once: p99 / max`, `${ms(x.p99)} / ${ms(x.max)}`, `${ms(y.p99)} / ${ms(y.max)}`, ratio(x.p99, y.p99), "no head-of-line wait"]);
  }
  rows.push([`${NPM_SIZES.packages} publishes, one after another (in turns)`, sec(a.publishSeconds), sec(b.publishSeconds), ratio(a.publishSeconds, b.publishSeconds), "well under x1"]);
  rows.push([`  server CPU per publish`, ms(a.publishCpuMs), ms(b.publishCpuMs), ratio(a.publishCpuMs, b.publishCpuMs), ""]);
  rows.push([`cold npm install, ${NPM_SIZES.packages} packages (mean)`, sec(avg(a.installs)), sec(avg(b.installs)), ratio(avg(a.installs), avg(b.installs)), "under x1"]);
  rows.push([`  each, in rounds`, a.installs.map(sec).join(", "), b.installs.map(sec).join(", "), "", ""]);
  const paired = pairedRatio(a.installs, b.installs);
  if (paired) {
    const verdict = paired.high < 1 ? "faster" : paired.low > 1 ? "slower" : "not told apart";
    rows.push([`  ratio of each round's pair, 95 % interval`, "", "", `x${paired.ratio.toFixed(2)} (x${paired.low.toFixed(2)}-x${paired.high.toFixed(2)})`, verdict]);
  }
  rows.push([`  a registry answering from memory (floor)`, `${sec(avg(floor))}: ${floor.map(sec).join(", ")}`, "", ratio(avg(floor), avg(b.installs)), ""]);
  rows.push([`set-up: ${NPM_SIZES.versions} + ${NPM_SIZES.bigVersions} versions`, `${sec(a.setup.medium)} + ${sec(a.setup.big)} (4 at once)`, `${sec(b.setup.medium)} + ${sec(b.setup.big)} (1 at once)`, "", ""]);

  const head: Row = ["", "suite (gateway, key)", `verdaccio ${VERDACCIO_VERSION} (JWT)`, "suite/verdaccio", "goal"];
  const widths = head.map((_, i) => Math.max(...[head, ...rows].map((r) => r[i]!.length)));
  const line = (r: Row) => r.map((c, i) => (i === 0 || i === 4 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ").trimEnd();
  console.log(`\nnpm: the suite side by side with Verdaccio (rates: ${ROUNDS} rounds in turns; latencies in ms; installs: wall time of each)\n`);
  console.log(line(head));
  for (const r of rows) console.log(line(r));
  if (profileFile) {
    const p = summariseProfile(profileFile, repoRoot);
    console.log(`\nartifacts service profile (${profileFile}): busy ${Math.round(p.busyMs)} ms of ${Math.round(p.totalMs)} ms`);
    for (const r of p.rows) console.log(`  ${r.selfMs.toFixed(0).padStart(7)} ms  ${(r.share * 100).toFixed(1).padStart(5)}%  ${r.name}`);
  }
  console.log("");
}
