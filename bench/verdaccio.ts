// Verdaccio, the npm registry teams self-host, as the npm bench's point of comparison: installed
// from the npm registry into <repo>/.data/bench/tools (never globally; kept for later runs),
// configured with JWT tokens (security.api.jwt: with its default legacy tokens every request
// checks a bcrypt password, about 15 requests per second here), every read and publish needing a
// token as the suite's do, storage and logs under the bench's data folder.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { request } from "undici";
import { log } from "./options.js";

/** The last Verdaccio that runs on Node 20 (6.9 and later need Node 22). */
export const VERDACCIO_VERSION = "6.8.0";

export interface RunningVerdaccio {
  /** The registry URL, with its trailing slash. */
  registry: string;
  /** A JWT token of the bench's user, as `npm login` would put it in .npmrc. */
  token: string;
  pid: number;
  stop(): Promise<void>;
}

/** Installs Verdaccio into `toolsDir` with npm when it is not there yet; the path of its command. */
export function ensureVerdaccio(toolsDir: string): string {
  const bin = join(toolsDir, "node_modules", "verdaccio", "bin", "verdaccio");
  const installed = join(toolsDir, "node_modules", "verdaccio", "package.json");
  if (existsSync(installed)) return bin;
  mkdirSync(toolsDir, { recursive: true });
  // node-fetch is asked for by its `cjs` dist-tag (verdaccio-audit), which the registry this
  // machine reaches does not carry: 2.7.0 is what that tag names.
  writeFileSync(join(toolsDir, "package.json"), JSON.stringify({ private: true, overrides: { "node-fetch": "2.7.0" } }));
  log(`installing verdaccio@${VERDACCIO_VERSION} into ${toolsDir}`);
  const r = spawnSync("npm", ["install", "--no-audit", "--no-fund", "--no-package-lock", `verdaccio@${VERDACCIO_VERSION}`], { cwd: toolsDir, encoding: "utf8", timeout: 600_000 });
  if (r.status !== 0) throw new Error(`npm install verdaccio failed:\n${(r.stderr ?? "").slice(-2000)}`);
  return bin;
}

/** An uplink: the registry Verdaccio proxies (`proxy:` on every package), with a bearer token. */
export interface Uplink {
  url: string;
  token: string;
}

function config(dir: string, uplink?: Uplink): string {
  // Verdaccio's defaults for an uplink otherwise (metadata kept 2 minutes, 30 s timeout, marked
  // down for 5 minutes after 2 failures).
  const uplinks = uplink ? `uplinks:\n  upstream:\n    url: ${uplink.url}\n    auth:\n      type: bearer\n      token: "${uplink.token}"\n` : "uplinks: {}\n";
  return `storage: ${join(dir, "storage")}
auth:
  htpasswd:
    file: ${join(dir, "htpasswd")}
    max_users: 10
security:
  api:
    jwt:
      sign:
        expiresIn: 7d
${uplinks}packages:
  "**":
    access: $authenticated
    publish: $authenticated
    unpublish: $authenticated
${uplink ? "    proxy: upstream\n" : ""}web:
  enable: false
max_body_size: 100mb
server:
  keepAliveTimeout: 60
log: { type: stdout, format: json, level: http }
`;
}

/** Starts Verdaccio on `port` with a fresh storage under `dir` (proxying `uplink` when given), and makes its user and token. */
export async function startVerdaccio(bin: string, dir: string, port: number, uplink?: Uplink): Promise<RunningVerdaccio> {
  mkdirSync(join(dir, "storage"), { recursive: true });
  const file = join(dir, "config.yaml");
  writeFileSync(file, config(dir, uplink));
  const child = spawn(process.execPath, [bin, "--config", file, "--listen", `127.0.0.1:${port}`], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NODE_ENV: "production" } });
  let output = "";
  const keep = (d: Buffer) => (output = (output + d.toString()).slice(-4000));
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  };
  process.once("exit", kill);
  const registry = `http://127.0.0.1:${port}/`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`verdaccio exited (${child.exitCode}):\n${output}`);
    try {
      const res = await request(`${registry}-/ping`);
      await res.body.text();
      if (res.statusCode === 200) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) {
      kill();
      throw new Error(`verdaccio did not start within 60 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  // What `npm adduser` sends: the user is created and a token answered (a JWT, per the config).
  const res = await request(`${registry}-/user/org.couchdb.user:bench`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ _id: "org.couchdb.user:bench", name: "bench", password: "bench-password-1", type: "user", roles: [] }),
  });
  const answer = (await res.body.json()) as { token?: string };
  if (res.statusCode !== 201 || !answer.token) throw new Error(`verdaccio adduser answered ${res.statusCode}: ${JSON.stringify(answer)}`);
  return {
    registry,
    token: answer.token,
    pid: child.pid ?? 0,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await Promise.race([gone, new Promise((r) => setTimeout(r, 5000))]);
      kill();
      process.removeListener("exit", kill);
    },
  };
}
