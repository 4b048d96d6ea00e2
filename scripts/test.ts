// `npm test`: the whole test suite — type check, unit tests, then end-to-end tests against the
// real services with their own Postgres, Redis and NATS (provisioned by tools/devstack, on
// free ports under .data/, never touching servers the machine already runs).
// Extra arguments go to vitest (e.g. `npm test -- test-e2e/access.test.ts`).
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startVitest } from "vitest/node";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
// `--project <name>` (repeatable) picks vitest projects (unit, e2e, e2e-s3); the rest are file filters.
const args = process.argv.slice(2);
const projects: string[] = [];
const filters: string[] = [];
for (let i = 0; i < args.length; i++) {
  const a = args[i]!;
  if (a === "--project" && i + 1 < args.length) projects.push(args[++i]!);
  else if (a.startsWith("--project=")) projects.push(a.slice("--project=".length));
  else filters.push(a);
}

if (filters.length === 0 && projects.length === 0) {
  console.log("typecheck: tsc --noEmit");
  const tsc = spawnSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", join(root, "tsconfig.json"), "--noEmit"], { stdio: "inherit" });
  if (tsc.status !== 0) {
    console.log("typecheck failed");
    console.log("0 passed, 1 failed");
    process.exit(1);
  }
}

// Ceph's packages, once, before any test file runs: the object store's tests start a RADOS
// Gateway of their own, and several at once must not each run apt-get (tools/devstack/src/object-store.ts).
if ((filters.length === 0 && projects.length === 0) || projects.includes("e2e-s3") || filters.some((f) => /s3|object-store/.test(f))) {
  const { CEPH_PACKAGES, ensureDebianPackages } = await import("@svc/devstack");
  await ensureDebianPackages(CEPH_PACKAGES);
}

const vitest = await startVitest("test", filters, { run: true, watch: false, root, ...(projects.length ? { project: projects } : {}) });
let passed = 0;
let failed = 0;
let skipped = 0;
for (const file of vitest?.state.getFiles() ?? []) {
  const walk = (tasks: typeof file.tasks) => {
    for (const t of tasks) {
      if (t.type === "suite") {
        // A suite whose beforeAll failed: its tests show as skipped, the failure is the suite's.
        const before = failed;
        walk(t.tasks);
        if (t.result?.state === "fail" && failed === before) failed++;
      }
      else if (t.result?.state === "pass") passed++;
      else if (t.result?.state === "fail") failed++;
      else skipped++;
    }
  };
  walk(file.tasks);
  if (file.result?.state === "fail" && file.tasks.every((t) => t.result?.state !== "fail")) failed++; // a file that failed to load or set up
}
const errors = vitest?.state.getUnhandledErrors().length ?? 0;
await vitest?.close();
console.log(`\ntests: ${passed} passed, ${failed + errors} failed${skipped ? `, ${skipped} skipped` : ""}`);
process.exit(failed + errors > 0 || passed === 0 ? 1 : 0);
