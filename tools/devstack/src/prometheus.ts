import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { findInPath, freePort, releasePort, updateAptLists } from "./index.js";
import { stopChild } from "./process.js";

/**
 * A real Prometheus server, for checking that the gateway's /metrics is what Prometheus scrapes.
 *
 * The binary is the one on PATH, or else Debian's `prometheus` package unpacked into `toolsDir`
 * (`apt-get download` + `dpkg-deb -x`): nothing is installed on the machine, no system daemon is
 * started, and the unpacked copy is reused by later runs.
 */
export async function ensurePrometheus(toolsDir: string, log: (line: string) => void = (l) => console.error(l)): Promise<string> {
  const onPath = findInPath("prometheus");
  if (onPath) return onPath;
  const unpacked = join(toolsDir, "prometheus", "usr", "bin", "prometheus");
  if (existsSync(unpacked)) return unpacked;

  const dir = join(toolsDir, "prometheus");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const download = () => spawnSync("apt-get", ["download", "prometheus"], { cwd: dir, encoding: "utf8" });
  log("[infra] fetching Debian's prometheus package (unpacked under the data folder, not installed)");
  let r = download();
  if (r.status !== 0) {
    // A fresh machine may not have the package lists yet.
    await updateAptLists(log);
    r = download();
  }
  const deb = readdirSync(dir).find((f) => f.endsWith(".deb"));
  if (r.status !== 0 || !deb) throw new Error(`apt-get download prometheus failed (${r.status}): ${(r.stderr ?? "").trim().slice(-500)}`);
  const x = spawnSync("dpkg-deb", ["-x", join(dir, deb), dir], { encoding: "utf8" });
  if (x.status !== 0 || !existsSync(unpacked)) throw new Error(`dpkg-deb -x ${deb} failed (${x.status}): ${(x.stderr ?? "").trim().slice(-500)}`);
  rmSync(join(dir, deb), { force: true });
  return unpacked;
}

export interface ScrapeTarget {
  /** host:port */
  target: string;
  metricsPath: string;
  /** Sent as `Authorization: Bearer <token>`; written to a file of its own, mode 0600. */
  bearerToken?: string;
}

export interface RunningPrometheus {
  url: string;
  /** GET /api/v1/<path>, parsed; throws unless Prometheus answers status "success". */
  api<T = unknown>(path: string): Promise<T>;
  stop(): Promise<void>;
}

/** Starts Prometheus on a free port, scraping `target` every second, with its data in `dataDir`. */
export async function startPrometheus(binary: string, dataDir: string, scrape: ScrapeTarget): Promise<RunningPrometheus> {
  mkdirSync(dataDir, { recursive: true });
  const port = await freePort();
  const tokenFile = join(dataDir, "token");
  if (scrape.bearerToken !== undefined) writeFileSync(tokenFile, scrape.bearerToken, { mode: 0o600 });
  const config = [
    "global:",
    "  scrape_interval: 1s",
    "  scrape_timeout: 1s",
    "scrape_configs:",
    "  - job_name: svc",
    `    metrics_path: ${JSON.stringify(scrape.metricsPath)}`,
    ...(scrape.bearerToken !== undefined ? ["    authorization:", "      type: Bearer", `      credentials_file: ${JSON.stringify(tokenFile)}`] : []),
    "    static_configs:",
    `      - targets: [${JSON.stringify(scrape.target)}]`,
    "",
  ].join("\n");
  const configFile = join(dataDir, "prometheus.yml");
  writeFileSync(configFile, config);
  const child = spawn(binary, [`--config.file=${configFile}`, `--storage.tsdb.path=${join(dataDir, "tsdb")}`, `--web.listen-address=127.0.0.1:${port}`, "--log.level=warn"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    await stopChild(child);
    releasePort(port);
  };

  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`prometheus exited with ${child.exitCode}:\n${output.slice(-2000)}`);
    const ready = await fetch(`${url}/-/ready`).then((r) => r.status === 200, () => false);
    if (ready) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`prometheus not ready after 30 s:\n${output.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }

  return {
    url,
    async api<T>(path: string): Promise<T> {
      const res = await fetch(`${url}/api/v1/${path}`);
      const body = (await res.json()) as { status: string; data: T; error?: string };
      if (body.status !== "success") throw new Error(`prometheus ${path}: ${body.error ?? res.status}`);
      return body.data;
    },
    stop,
  };
}
