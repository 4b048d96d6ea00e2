#!/usr/bin/env node
// Installs the workspace's packages with a pinned pnpm, run through npm (corepack's
// signature check fails against some registries, so we never rely on it).
// Skips the install when node_modules already matches the lockfile; then builds the svc client
// when its bundle is missing or older than its sources.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const PNPM_VERSION = "10.34.8";
const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const lockfile = join(root, "pnpm-lock.yaml");
const stamp = join(root, "node_modules", ".suite-install-stamp");

function fingerprint() {
  const h = createHash("sha256");
  for (const f of [lockfile, join(root, "package.json")]) {
    if (existsSync(f)) h.update(readFileSync(f));
  }
  return h.digest("hex");
}

const want = fingerprint();
if (!existsSync(stamp) || readFileSync(stamp, "utf8") !== want) {
  const args = ["exec", "--yes", `pnpm@${PNPM_VERSION}`, "--", "install", "--reporter=default"];
  if (existsSync(lockfile)) args.push("--frozen-lockfile");
  console.error(`[setup] installing packages with pnpm ${PNPM_VERSION}`);
  const r = spawnSync("npm", args, { cwd: root, stdio: "inherit", env: { ...process.env, npm_config_update_notifier: "false" } });
  if (r.status !== 0) {
    console.error("[setup] package install failed");
    process.exit(r.status ?? 1);
  }
  writeFileSync(stamp, fingerprint());
}

// The svc client is one bundled file (packages/cli/dist/svc.mjs) that `npm exec svc` runs:
// built here, after the install that brings esbuild, and again whenever its sources changed.
try {
  const { buildCli } = await import("../packages/cli/scripts/build-cli.mjs");
  await buildCli();
} catch (err) {
  // The servers do not need the client: say so and let `npm start` / `npm test` go on.
  console.error(`[setup] building the svc client (packages/cli) failed, so \`npm exec svc\` will not work until it builds: ${err.message}`);
}
