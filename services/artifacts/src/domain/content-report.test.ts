import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { filesystemBlobStore } from "@svc/blobs";
import { CONTENT_LIMITS, contentReporterFactory, filesystemLocator, fingerprintOf, readContentRequest } from "./content-report.js";

const sha = (s: string | Buffer) => createHash("sha256").update(s).digest("hex");

/** A pool that answers the reporter's statements from `rows` (repository/path -> row); the cluster's identifier is refused, as to a role without pg_monitor. */
function fakePool(rows: Map<string, { sha256: string; size: number; young?: boolean }>, sample: Array<{ repository: string; path: string }> = []) {
  return {
    async query(text: string, values?: unknown[]) {
      if (text.includes("pg_control_system")) throw new Error("permission denied");
      if (text.includes("current_database")) return { rows: [{ db: "svc", addr: "10.0.0.5/32", port: 5432 }] };
      if (text.includes("unnest")) return { rows: sample };
      const row = rows.get(`${values![0]}/${values![1]}`);
      return { rows: row ? [{ young: false, ...row }] : [] };
    },
  };
}

describe("what an artifacts node reports it serves", () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), "content-report-"));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it("answers each path as a download would find it: ok, missing, other bytes, absent; young rows flagged", async () => {
    const blobs = filesystemBlobStore({ root, readOnly: false });
    await blobs.init();
    const good = await blobs.put(Buffer.from("good"));
    // Other bytes under a digest: what a store that is not the one the index describes holds.
    const wrong = sha("right");
    mkdirSync(join(root, "blobs", "sha256", wrong.slice(0, 2)), { recursive: true });
    writeFileSync(join(root, "blobs", "sha256", wrong.slice(0, 2), wrong), "wrong");
    const rows = new Map([
      ["r/good.txt", { sha256: good.sha256, size: 4 }],
      ["r/young.txt", { sha256: good.sha256, size: 4, young: true }],
      ["r/missing.txt", { sha256: sha("gone"), size: 4 }],
      ["r/wrong.txt", { sha256: wrong, size: 5 }],
      ["r/short.txt", { sha256: good.sha256, size: 9 }],
    ]);
    const reporter = contentReporterFactory({ pool: fakePool(rows) as never, blobs, node: "artifacts@h:1", storageLocator: filesystemLocator(root) });
    const paths = ["good.txt", "young.txt", "missing.txt", "wrong.txt", "short.txt", "none.txt"].map((path) => ({ repository: "r", path }));
    const reply = await reporter.answer({ paths });
    expect(reply.answers.map((a) => [a.path, a.blob ?? "absent", a.young ?? false])).toEqual([
      ["good.txt", "ok", false],
      ["young.txt", "ok", true],
      ["missing.txt", "missing", false],
      ["wrong.txt", "corrupt", false],
      ["short.txt", "corrupt", false],
      ["none.txt", "absent", false],
    ]);
    expect(reply).toMatchObject({ node: "artifacts@h:1", service: "artifacts", storage: { kind: "filesystem", fingerprint: fingerprintOf(filesystemLocator(root)) }, sample: [] });
    // Fingerprints only: the root and the database's address never leave the node.
    expect(JSON.stringify(reply)).not.toContain(root);
    expect(JSON.stringify(reply)).not.toContain("10.0.0.5");
  });

  it("proposes a sample when asked, and caps what one request may ask", async () => {
    const blobs = filesystemBlobStore({ root, readOnly: true });
    const pool = fakePool(new Map(), [{ repository: "r", path: "a" }, { repository: "r", path: "a" }, { repository: "r", path: "b" }]);
    const reporter = contentReporterFactory({ pool: pool as never, blobs, node: "n", storageLocator: filesystemLocator(root) });
    expect((await reporter.answer({ sample: 5 })).sample).toEqual([{ repository: "r", path: "a" }, { repository: "r", path: "b" }]);
    const many = Array.from({ length: 500 }, (_, i) => ({ repository: "r", path: `${i}` }));
    expect(readContentRequest({ paths: many, sample: 10_000 })).toMatchObject({ sample: CONTENT_LIMITS.sample, olderThanMs: 60_000 });
    expect(readContentRequest({ paths: many }).paths).toHaveLength(CONTENT_LIMITS.paths);
    expect(readContentRequest("nonsense")).toEqual({ sample: 0, olderThanMs: 60_000, paths: [] });
    expect(readContentRequest({ paths: [{ repository: 1, path: "x" }, null] }).paths).toEqual([]);
  });
});
