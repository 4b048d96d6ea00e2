import { test } from "vitest";
import { startSuite } from "./suite.js";
test("measure", async () => {
  const s = await startSuite();
  for (const n of ["console", "notifier", "walker", "admin", "artifacts", "auth", "gateway"] as const) {
    const t = Date.now();
    const code = await s.stopService(n, "SIGTERM", 40_000);
    console.log(`STOP ${n} code=${code} ${Date.now() - t}ms`);
  }
  for (const l of s.output("auth").slice(-6)) console.log("A", l.slice(0, 200));
  await s.stop();
}, 300_000);
