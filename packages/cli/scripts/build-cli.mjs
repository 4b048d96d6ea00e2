#!/usr/bin/env node
// Bundles the svc client into one file (dist/svc.mjs) that runs on Node 20 with nothing else
// installed: users copy that file anywhere and run it with `node`. Called by the project's set-up
// (scripts/ensure-deps.mjs), by `pnpm -r run build`, and by the end-to-end test before it runs the file.
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = join(dirname(fileURLToPath(import.meta.url)), "..");
export const CLI_OUTFILE = join(here, "dist", "svc.mjs");

function newestSource(dir) {
  let newest = 0;
  for (const name of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, name.name);
    newest = Math.max(newest, name.isDirectory() ? newestSource(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/** True when dist/svc.mjs is missing or older than a source file or this script. */
export function cliIsStale() {
  if (!existsSync(CLI_OUTFILE)) return true;
  const built = statSync(CLI_OUTFILE).mtimeMs;
  return newestSource(join(here, "src")) > built || statSync(fileURLToPath(import.meta.url)).mtimeMs > built;
}

export async function buildCli({ force = false } = {}) {
  if (!force && !cliIsStale()) return CLI_OUTFILE;
  const { build } = await import("esbuild");
  await build({
    entryPoints: [join(here, "src", "svc-entry.ts")],
    outfile: CLI_OUTFILE,
    bundle: true,
    platform: "node",
    target: "node20",
    format: "esm",
    banner: { js: "#!/usr/bin/env node" },
    legalComments: "none",
    logLevel: "warning",
  });
  return CLI_OUTFILE;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await buildCli({ force: process.argv.includes("--force") });
}
