import { defineConfig } from "vitest/config";

import LongestFirst from "./test-e2e/sequencer.js";

/**
 * The e2e files that run a second time on the S3 blob store (project e2e-s3): raw artifacts, npm
 * with its real clients, export, the walks (retention among them), the blob store, the OCI
 * registry (chunked uploads assembled from the store, ranges, mounts; on two nodes, a reclaim walk
 * during a push) and proxy fetches streamed across nodes (the fetching node's spool is its own
 * there too). Maven and PyPI store through the same blob store calls as npm: their slow client
 * tests run once; OCI garbage collection (oci-gc) is rows alone, and runs once.
 */
const E2E_S3_FILES = ["artifacts", "npm-format", "export", "walks", "blob-store", "oci", "oci-nodes", "proxy-stream-nodes"].map((f) => `test-e2e/${f}.test.ts`);

export default defineConfig({
  test: {
    sequence: { sequencer: LongestFirst },
    projects: [
      {
        test: {
          name: "unit",
          sequence: { groupOrder: 0 },
          include: ["packages/*/src/**/*.test.ts", "services/*/src/**/*.test.ts", "tools/*/src/**/*.test.ts", "deploy/**/*.test.ts"],
          // Both cores (vitest's default leaves one free: half the speed on a machine of two).
          maxWorkers: 2,
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
      {
        // The S3 pass: the files where storage matters, again with every suite on the S3 blob
        // store (a bucket of its own on one RADOS Gateway for the run, test-e2e/global-setup-s3.ts).
        // A step a test takes behind the server's back reaches the folder or the bucket
        // (test-e2e/store-objects.ts); a test about the folder alone is defined on the filesystem only.
        test: {
          name: "e2e-s3",
          // In the e2e group: the same two workers take e2e and e2e-s3 files, longest first
          // (test-e2e/sequencer.ts), so the S3 files fill the run rather than trail it.
          sequence: { groupOrder: 1 },
          include: E2E_S3_FILES,
          globalSetup: ["test-e2e/global-setup.ts", "test-e2e/global-setup-s3.ts"],
          setupFiles: ["test-e2e/setup.ts"],
          env: { SVC_TEST_STORAGE: "s3" },
          testTimeout: 180_000,
          hookTimeout: 180_000,
          maxWorkers: 2,
          isolate: true,
        },
      },
    ],
  },
});
