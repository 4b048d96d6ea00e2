import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          sequence: { groupOrder: 0 },
          include: ["packages/*/src/**/*.test.ts", "services/*/src/**/*.test.ts", "tools/*/src/**/*.test.ts", "deploy/**/*.test.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: "e2e",
          sequence: { groupOrder: 1 },
          include: ["test-e2e/**/*.test.ts"],
          globalSetup: ["test-e2e/global-setup.ts"],
          setupFiles: ["test-e2e/setup.ts"],
          // Real clients (pip building wheels, Maven, npm installs) on a machine whose two cores
          // are busy can take over a minute for one test; no test asserts a time.
          testTimeout: 180_000,
          hookTimeout: 180_000,
          // Each file starts its own suite of service processes; two at a time fit two cores.
          maxWorkers: 2,
          isolate: true,
        },
      },
    ],
  },
});
