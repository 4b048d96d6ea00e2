#!/usr/bin/env node
// What `npm exec svc` runs inside the workspace: the bundled client, built first if the set-up
// has not built it yet (pnpm links this launcher at install time, before any build has run).
import { existsSync } from "node:fs";

const bundle = new URL("../dist/svc.mjs", import.meta.url);
if (!existsSync(bundle)) {
  const { buildCli } = await import("../scripts/build-cli.mjs");
  await buildCli();
}
await import(bundle.href);
