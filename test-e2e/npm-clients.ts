import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { inject } from "vitest";
import { startSuite, type Suite } from "./suite.js";

/**
 * The npm clients the npm-format suite drives, unmodified: npm 11 from the machine, and pnpm,
 * yarn 1 and yarn 4 installed from the npm registry into .data/tools/npm-clients (never
 * globally), once, and kept for later runs. Every run points them at scratch configuration
 * and caches, so nothing of the machine's own setup leaks in.
 */
const TOOLS = resolve(import.meta.dirname, "..", ".data", "tools", "npm-clients");
const VERSIONS = { pnpm: "pnpm@10.34.8", yarn1: "yarn@1.22.22", yarn4: "@yarnpkg/cli-dist@4.9.2" } as const;

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout and stderr together, for assertions on what the client printed. */
  output: string;
}

export function run(command: string, args: string[], opts: { cwd: string; env: Record<string, string>; timeoutMs?: number }): Promise<Run> {
  return new Promise((done) => {
    execFile(command, args, { cwd: opts.cwd, env: opts.env, timeout: opts.timeoutMs ?? 180_000, maxBuffer: 32 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === "number" ? ((err as { code: number }).code) : 1) : 0;
      // A client that could not start, or was stopped, says nothing itself.
      const why = err && code === 1 && !stdout && !stderr ? `${err.message}\n` : "";
      done({ code, stdout, stderr, output: `${why}${stdout}\n${stderr}` });
    });
  });
}

/** A scratch environment: its own HOME, npm user config and caches; PATH and the Node binary kept. */
export function scratchEnv(dir: string, extra: Record<string, string> = {}): Record<string, string> {
  mkdirSync(join(dir, "home"), { recursive: true });
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: join(dir, "home"),
    npm_config_userconfig: join(dir, "npmrc"),
    npm_config_globalconfig: join(dir, "npmrc-global"),
    npm_config_cache: join(dir, "npm-cache"),
    npm_config_update_notifier: "false",
    npm_config_fund: "false",
    npm_config_audit: "false",
    YARN_CACHE_FOLDER: join(dir, "yarn-cache"),
    YARN_ENABLE_GLOBAL_CACHE: "false",
    YARN_ENABLE_TELEMETRY: "false",
    XDG_CONFIG_HOME: join(dir, "xdg-config"),
    XDG_CACHE_HOME: join(dir, "xdg-cache"),
    XDG_DATA_HOME: join(dir, "xdg-data"),
    ...extra,
  };
}

/** How this machine reaches the internet: its CA bundle and proxy, for installing the clients only. */
function networkEnv(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ["NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy"]) {
    const v = process.env[name];
    if (v) out[name] = v;
  }
  const ca = [process.env.NODE_EXTRA_CA_CERTS, process.env.SSL_CERT_FILE, "/etc/ssl/certs/ca-certificates.crt"].find((f) => f && existsSync(f));
  if (ca) out.npm_config_cafile = ca;
  return out;
}

export interface Clients {
  npm: string;
  pnpm: string;
  yarn1: string;
  /** yarn 4 is a single script run with node. */
  yarn4: string;
}

/** Installs the clients that are missing (from the npm registry, with the machine's npm, into scratch config). */
export async function ensureClients(): Promise<Clients> {
  const clients: Clients = {
    npm: "npm",
    pnpm: join(TOOLS, "pnpm", "node_modules", ".bin", "pnpm"),
    yarn1: join(TOOLS, "yarn1", "node_modules", ".bin", "yarn"),
    yarn4: join(TOOLS, "yarn4", "node_modules", "@yarnpkg", "cli-dist", "bin", "yarn.js"),
  };
  for (const [name, spec] of Object.entries(VERSIONS) as [keyof typeof VERSIONS, string][]) {
    if (existsSync(clients[name])) continue;
    const prefix = join(TOOLS, name);
    mkdirSync(prefix, { recursive: true });
    writeFileSync(join(prefix, "package.json"), JSON.stringify({ name: `svc-test-${name}`, private: true }));
    const scratch = mkdtempSync(join(TOOLS, "install-"));
    // The public registry: the scratch config names it, whatever the machine's own npmrc says;
    // the machine's trust store and proxy are kept (a TLS-inspecting proxy signs with its own CA).
    const env = scratchEnv(scratch, { npm_config_registry: "https://registry.npmjs.org/", ...networkEnv() });
    const r = await run("npm", ["install", "--no-save", "--no-package-lock", "--ignore-scripts", spec], { cwd: prefix, env, timeoutMs: 300_000 });
    if (r.code !== 0 || !existsSync(clients[name])) throw new Error(`could not install ${spec} into ${prefix}:\n${r.output.slice(-2000)}`);
  }
  return clients;
}

/** Fails with the client's own output when it exited with an error. */
export function expectOk(r: Run): void {
  if (r.code !== 0) throw new Error(`exit ${r.code}:\n${r.output.slice(-3000)}`);
}

export interface NpmSuite {
  suite: Suite;
  clients: Clients;
  /** A scratch folder of this file's own, under the suite's data folder. */
  work: string;
  /** The npm repository's registry address, `<gateway>/repository/npm/`. */
  registry: string;
  /** A key granted `deploy` on the repository, and one granted `read-only`. */
  deployer: string;
  reader: string;
}

/**
 * The suite with an npm repository `npm` (created at first start; scope from the path, since
 * the clients cannot send Service-Repository-Name), the clients, and a deployer and a reader key.
 * `env`: more settings for the suite.
 */
export async function startNpmSuite(workPrefix: string, env: Record<string, string> = {}): Promise<NpmSuite> {
  const [suite, clients] = await Promise.all([
    startSuite({ env: { SVC_REPOSITORY: "npm", SVC_REPOSITORY_FORMAT: "npm", SVC_REPOSITORY_SCOPE_FROM_PATH: "true", ...env } }),
    ensureClients(),
  ]);
  const work = mkdtempSync(join(inject("dataDir"), workPrefix));
  const registry = `${suite.gatewayUrl}/repository/npm/`;
  const deployer = (await suite.mint({ label: "publisher", grants: [{ scope: "npm", tokens: ["deploy"] }] })).key;
  const reader = (await suite.mint({ label: "reader", grants: [{ scope: "npm", tokens: ["read-only"] }] })).key;
  return { suite, clients, work, registry, deployer, reader };
}
