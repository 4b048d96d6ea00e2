// `npm run bench -- --proxy`: a proxy repository of the suite beside Verdaccio with an uplink,
// both proxying the same upstream registry on this machine (a third Verdaccio, holding the
// packages, behind a small counting relay in this process). Measured side by side in one run:
// cold and warm `npm install`s through each proxy (paired, in turns), how many upstream fetches 50
// concurrent requests for one uncached tarball make, and whether builds still install with the
// upstream stopped. Figures are printed, never asserted. See bench/README.md ("npm proxy").
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { request } from "undici";
import { freePort } from "@svc/devstack";
import type { ServiceName } from "@svc/devstack/service-runner";
import { startBenchSuite } from "./bench-suite.js";
import { collectProfile, summariseProfile } from "./cpuprofile.js";
import { coldInstall, NPM_SUITE_ENV, pairedRatio, type NpmTarget } from "./npm-measure.js";
import { closeNpmAgent, publish, publishDoc } from "./npm-packages.js";
import { dataDir, log, npmDir, NPM_SIZES, PROFILE, PROFILE_SERVICE, profileDir, repoRoot, suiteDir, toolsDir } from "./options.js";
import { ensureVerdaccio, startVerdaccio, VERDACCIO_VERSION } from "./verdaccio.js";

/** Sets of packages, each installed cold once through each proxy (a cold install can be taken only once per set). */
const SETS = 3;
const WARM_ROUNDS = 3;
const CONCURRENT = 50;
const pkg = (set: number, i: number) => `bench-px-${set}-${String(i).padStart(3, "0")}`;

/**
 * The upstream's door: forwards every request to the upstream registry and counts the GETs of
 * each path; `down()` stops listening and cuts open connections (the upstream gone, as a stopped
 * process is), `up()` listens again on the same port. `tamper` (tests) may answer other bytes
 * than the upstream's: for a path it names a change of the body, applied to a 200 answer.
 */
export async function countingRelay(target: string, port: number, opts: { tamper?: (path: string) => ((body: Buffer) => Buffer) | undefined } = {}) {
  const counts = new Map<string, number>();
  const sockets = new Set<Socket>();
  const upstream = new URL(target);
  let server: Server | undefined;
  /**
   * GETs of paths containing `held.fragment` wait until it is released (tests stop a node
   * mid-fetch); with `midway`, the answer's head and the first half of its body are sent first.
   */
  let held: { fragment: string; released: Promise<void>; release: () => void; midway: boolean; sent: Promise<void>; markSent: () => void } | undefined;
  /** GETs of paths containing one of these are answered with their last byte changed (a file that is not what its metadata says). */
  const corrupted = new Set<string>();
  const listen = () =>
    new Promise<void>((done) => {
      server = createServer(async (req, res) => {
        if (req.method === "GET") counts.set(req.url ?? "", (counts.get(req.url ?? "") ?? 0) + 1);
        const url = req.url ?? "";
        const holding = held && url.includes(held.fragment) ? held : undefined;
        if (holding && !holding.midway) await holding.released;
        // The Host the client sent goes on: the upstream names the relay in the tarball URLs it answers, so a proxy fetches them through it (and is counted).
        const out = httpRequest({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
          const change = answer.statusCode === 200 ? opts.tamper?.(url) : undefined;
          if (change) return void tampered(answer, res, change);
          if (!(holding?.midway || [...corrupted].some((f) => url.includes(f)))) {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
            return;
          }
          // Read whole, then changed or sent in two parts (Content-Length kept: the body's length does not change).
          const chunks: Buffer[] = [];
          answer.on("data", (c: Buffer) => chunks.push(c));
          answer.on("end", () => {
            const body = Buffer.concat(chunks);
            if ([...corrupted].some((f) => url.includes(f)) && body.length > 0) body[body.length - 1] = body[body.length - 1]! ^ 0xff;
            const { "transfer-encoding": _chunked, ...headers } = answer.headers;
            res.writeHead(answer.statusCode ?? 502, { ...headers, "content-length": String(body.length) });
            if (!holding?.midway) return void res.end(body);
            const half = Math.floor(body.length / 2);
            res.write(body.subarray(0, half), () => holding.markSent());
            void holding.released.then(() => res.end(body.subarray(half)));
          });
        });
        out.on("error", () => res.destroy());
        req.pipe(out);
      });
      server.on("connection", (s) => {
        sockets.add(s);
        s.once("close", () => sockets.delete(s));
      });
      server.listen(port, "127.0.0.1", done);
    });
  await listen();
  return {
    url: `http://127.0.0.1:${port}/`,
    /** GETs of paths containing `fragment` so far. */
    gets: (fragment: string) => [...counts].filter(([path]) => path.includes(fragment)).reduce((a, [, n]) => a + n, 0),
    down: async () => {
      const s = server!;
      await new Promise<void>((done) => {
        s.close(() => done());
        for (const c of sockets) c.destroy();
      });
    },
    up: listen,
    /**
     * From now on, GETs of paths containing `fragment` wait until `release()`; with `midway`, they
     * are answered the head and half the body first (`sent` resolves once that half is written).
     */
    hold(fragment: string, opts: { midway?: boolean } = {}) {
      let release = () => {};
      const released = new Promise<void>((r) => (release = r));
      let markSent = () => {};
      const sent = new Promise<void>((r) => (markSent = r));
      held = { fragment, released, release: () => { held = undefined; release(); }, midway: opts.midway ?? false, sent, markSent };
      return { sent };
    },
    release: () => held?.release(),
    /** GETs of paths containing `fragment` answered with their last byte changed, until `intact(fragment)`. */
    corrupt: (fragment: string) => void corrupted.add(fragment),
    intact: (fragment: string) => void corrupted.delete(fragment),
  };
}

/** An answer's body read whole, changed, and sent on with the upstream's headers (its length the new one's). */
async function tampered(answer: IncomingMessage, res: ServerResponse, change: (body: Buffer) => Buffer): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of answer) chunks.push(chunk as Buffer);
  const body = change(Buffer.concat(chunks));
  const { "content-length": _length, "transfer-encoding": _encoding, etag: _etag, ...headers } = answer.headers;
  res.writeHead(200, { ...headers, "content-length": String(body.length) });
  res.end(body);
}

interface ProxyFigures {
  cold: number[];
  warm: number[];
  concurrent: { fetches: number; ok: number; firstByteMs: number[] };
  upstreamDown: { installed: boolean; seconds: number; error?: string };
}

export async function runProxy(): Promise<void> {
  const cleanups: Array<() => Promise<unknown>> = [];
  const count = NPM_SIZES.packages;
  // --profile[=service]: that service runs under --cpu-prof through the cold and warm installs.
  const nodeArgs: Partial<Record<ServiceName, string[]>> = PROFILE ? { [PROFILE_SERVICE!]: ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] } : {};
  try {
    for (const d of [suiteDir, npmDir, profileDir]) rmSync(d, { recursive: true, force: true });
    mkdirSync(dataDir, { recursive: true });
    const bin = ensureVerdaccio(toolsDir);

    log(`starting the upstream registry (verdaccio ${VERDACCIO_VERSION}) and publishing ${SETS} sets of ${count} packages to it`);
    const origin = await startVerdaccio(bin, join(npmDir, "upstream"), await freePort());
    cleanups.push(() => origin.stop());
    for (let set = 0; set < SETS; set++) {
      for (let i = 0; i < count; i += 8) {
        await Promise.all(Array.from({ length: Math.min(8, count - i) }, (_, j) => publish(origin.registry, origin.token, publishDoc(origin.registry, pkg(set, i + j), "1.0.0"))));
      }
    }
    for (const hot of ["bench-px-hot-suite", "bench-px-hot-verdaccio"]) await publish(origin.registry, origin.token, publishDoc(origin.registry, hot, "1.0.0", { big: true }));
    const relay = await countingRelay(origin.registry, await freePort());

    log("starting verdaccio with the upstream as its uplink");
    const v = await startVerdaccio(bin, join(npmDir, "verdaccio"), await freePort(), { url: relay.url, token: origin.token });
    cleanups.push(() => v.stop());

    log("starting the suite with a proxy repository of the upstream");
    // The upstream is on this machine: private addresses allowed for proxy upstreams.
    const s = (await startBenchSuite(cleanups, nodeArgs, { ...NPM_SUITE_ENV, SVC_BLOCK_PRIVATE_IMPORT_HOSTS: "false" })).suite;
    const created = await request(`${s.gatewayUrl}/api/repositories`, {
      method: "POST",
      headers: { "service-repository-key": s.bootstrapKey, "content-type": "application/json" },
      body: JSON.stringify({ name: "npm-proxy", format: "npm", type: "proxy", upstream: { url: relay.url, credentials: { token: origin.token } } }),
    });
    const answer = await created.body.text();
    if (created.statusCode !== 201) throw new Error(`creating the proxy repository answered ${created.statusCode}: ${answer}`);

    const targets: NpmTarget[] = [
      { label: "suite", registry: `${s.gatewayUrl}/repository/npm-proxy/`, token: s.bootstrapKey, pids: () => [s.pid("gateway") ?? 0, s.pid("artifacts") ?? 0] },
      { label: "verdaccio", registry: v.registry, token: v.token, pids: () => [v.pid] },
    ];
    const figures = new Map<string, ProxyFigures>(targets.map((t) => [t.label, { cold: [], warm: [], concurrent: { fetches: 0, ok: 0, firstByteMs: [] }, upstreamDown: { installed: false, seconds: NaN } }]));
    const depsOf = (set: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [pkg(set, i), "^1.0.0"]));

    // Cold: each set once through each proxy, in turns (the first alternates between rounds).
    for (let set = 0; set < SETS; set++) {
      for (const t of set % 2 === 0 ? targets : [...targets].reverse()) figures.get(t.label)!.cold.push(await coldInstall(t, join(npmDir, `install-${t.label}`), depsOf(set)));
    }
    // Warm: the proxies hold every package now; npm's own cache is fresh each time.
    for (let round = 0; round < WARM_ROUNDS; round++) {
      for (const t of round % 2 === 0 ? targets : [...targets].reverse()) figures.get(t.label)!.warm.push(await coldInstall(t, join(npmDir, `install-${t.label}`), depsOf(0)));
    }
    let profileFile: string | undefined;
    if (PROFILE) {
      log(`stopping the profiled ${PROFILE_SERVICE} service so it writes its profile, then starting it again without --cpu-prof`);
      profileFile = await collectProfile(s, PROFILE_SERVICE!, nodeArgs, profileDir);
    }
    // One uncached tarball asked for by 50 clients at once, through each proxy (its own package).
    for (const t of targets) {
      const name = `bench-px-hot-${t.label}`;
      const path = `${name}/-/${name}-1.0.0.tgz`;
      log(`proxy: ${t.label}: ${CONCURRENT} requests at once for an uncached tarball`);
      const f = figures.get(t.label)!.concurrent;
      const results = await Promise.all(
        Array.from({ length: CONCURRENT }, async () => {
          const t0 = performance.now();
          const res = await request(`${t.registry}${path}`, { headers: { authorization: `Bearer ${t.token}` } });
          const first = performance.now() - t0;
          await res.body.arrayBuffer();
          return { status: res.statusCode, first };
        }),
      );
      f.ok = results.filter((r) => r.status === 200).length;
      f.firstByteMs = results.map((r) => r.first).sort((a, b) => a - b);
      f.fetches = relay.gets(`${name}-1.0.0.tgz`);
    }
    // The upstream stopped: a build installs what the proxies cached (a fresh npm cache).
    await relay.down();
    for (const t of targets) {
      const f = figures.get(t.label)!;
      try {
        f.upstreamDown = { installed: true, seconds: await coldInstall(t, join(npmDir, `install-${t.label}`), depsOf(0)) };
      } catch (err) {
        f.upstreamDown = { installed: false, seconds: NaN, error: (err as Error).message.split("\n").find((l) => /ERR|error/.test(l))?.slice(0, 120) ?? "failed" };
      }
    }
    await relay.up();
    print(figures.get("suite")!, figures.get("verdaccio")!, count, profileFile);
  } finally {
    for (const c of cleanups.reverse()) await c().catch((err) => log(`cleanup: ${(err as Error).message}`));
    await closeNpmAgent().catch(() => {});
    rmSync(suiteDir, { recursive: true, force: true });
    rmSync(npmDir, { recursive: true, force: true });
  }
}

const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const sec = (x: number) => (Number.isFinite(x) ? `${x.toFixed(1)} s` : "-");
const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] ?? NaN;

function print(a: ProxyFigures, b: ProxyFigures, count: number, profileFile: string | undefined): void {
  type Row = [label: string, suite: string, verdaccio: string, ratio: string, goal: string];
  const ratio = (x: number, y: number) => (y > 0 && Number.isFinite(x) ? `x${(x / y).toFixed(2)}` : "-");
  const interval = (x: number[], y: number[]) => {
    const p = pairedRatio(x, y);
    if (!p) return ["", ""];
    return [`x${p.ratio.toFixed(2)} (x${p.low.toFixed(2)}-x${p.high.toFixed(2)})`, p.high < 1 ? "faster" : p.low > 1 ? "slower" : "not told apart"];
  };
  const rows: Row[] = [];
  rows.push([`cold install through the proxy, ${count} packages (mean)`, sec(avg(a.cold)), sec(avg(b.cold)), ratio(avg(a.cold), avg(b.cold)), "under x1"]);
  rows.push(["  each set, in turns", a.cold.map(sec).join(", "), b.cold.map(sec).join(", "), "", ""]);
  const [ci, cv] = interval(a.cold, b.cold);
  rows.push(["  ratio of each pair, 95 % interval", "", "", ci!, cv!]);
  rows.push([`warm install (proxies hold them; npm cache fresh)`, sec(avg(a.warm)), sec(avg(b.warm)), ratio(avg(a.warm), avg(b.warm)), "under x1"]);
  rows.push(["  each round, in turns", a.warm.map(sec).join(", "), b.warm.map(sec).join(", "), "", ""]);
  const [wi, wv] = interval(a.warm, b.warm);
  rows.push(["  ratio of each pair, 95 % interval", "", "", wi!, wv!]);
  rows.push([`${CONCURRENT} at once, one uncached tarball: upstream fetches`, String(a.concurrent.fetches), String(b.concurrent.fetches), "", "exactly 1"]);
  rows.push(["  answered 200", `${a.concurrent.ok}/${CONCURRENT}`, `${b.concurrent.ok}/${CONCURRENT}`, "", ""]);
  const fb = (f: ProxyFigures) => `${Math.round(pct(f.concurrent.firstByteMs, 50))} / ${Math.round(pct(f.concurrent.firstByteMs, 99))} ms`;
  rows.push(["  time to the first byte p50 / p99", fb(a), fb(b), "", ""]);
  const down = (f: ProxyFigures) => (f.upstreamDown.installed ? `installed, ${sec(f.upstreamDown.seconds)}` : `failed: ${f.upstreamDown.error}`);
  rows.push([`upstream stopped: install of the cached ${count}`, down(a), down(b), "", "installs"]);

  const head: Row = ["", "suite (proxy repository)", `verdaccio ${VERDACCIO_VERSION} (uplink)`, "suite/verdaccio", "goal"];
  const widths = head.map((_, i) => Math.max(...[head, ...rows].map((r) => r[i]!.length)));
  const line = (r: Row) => r.map((c, i) => (i === 0 || i === 4 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ").trimEnd();
  console.log(`\nnpm proxy: the suite's proxy repository beside Verdaccio with an uplink, the same upstream (installs: wall time of each)\n`);
  console.log(line(head));
  for (const r of rows) console.log(line(r));
  if (profileFile) {
    const p = summariseProfile(profileFile, repoRoot);
    console.log(`\n${PROFILE_SERVICE} service profile, cold and warm installs (${profileFile}): busy ${Math.round(p.busyMs)} ms of ${Math.round(p.totalMs)} ms`);
    for (const r of p.rows) console.log(`  ${r.selfMs.toFixed(0).padStart(7)} ms  ${(r.share * 100).toFixed(1).padStart(5)}%  ${r.name}`);
  }
  console.log("");
}
