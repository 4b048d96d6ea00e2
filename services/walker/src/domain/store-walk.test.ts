import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { InternalCallError } from "@svc/kit";
import type { Job, MetaInfo, RepositoryInfo } from "./job-types.js";
import { comparePaths, newProgress, walkStore, type StoreWalkOptions } from "./store-walk.js";
import { memoryBlobStore } from "./test-blob-store.js";

const sha = (s: string) => createHash("sha256").update(s).digest("hex");
const meta = (path: string, content = path): MetaInfo => ({ path, size: Buffer.byteLength(content), sha256: sha(content), updated: "2026-01-01T00:00:00.000Z", lastDownloaded: null, held: false });
const libs: RepositoryInfo = { name: "libs", format: "raw", retention: null };
/** A repository's index as the artifacts service pages it: byte order, `size` rows a page. */
const pages = (rows: MetaInfo[], size = 1000) =>
  async function* () {
    const sorted = [...rows].sort((a, b) => comparePaths(a.path, b.path));
    for (let i = 0; i < sorted.length; i += size) yield sorted.slice(i, i + size);
  };

function walk(o: Partial<StoreWalkOptions> & { jobs: Job[] }) {
  const progress = newProgress();
  const blobs = o.blobs ?? memoryBlobStore().store;
  return { progress, done: walkStore({ blobs, repositories: [libs], metadata: pages([]), shouldStop: () => false, progress, ...o }) };
}

describe("one pass over the index and the blob listing", () => {
  it("hands each index row to every job in byte order of the path, page by page, asking the store for a row's blob once per digest within a page", async () => {
    const names = ["a/x", "a-b", "a.txt", "a0", "a/b/c", "a b", "Z", "é/1", "e", "a/b.txt", "b/a/a"];
    const m = memoryBlobStore();
    for (const n of names) m.plant(n);
    let heads = 0;
    const blobs = { ...m.store, head: (d: string) => (heads++, m.store.head(d)) };
    // Two rows of one page name the same content.
    const rows = [...names.map((n) => meta(n)), meta("copy-of-e", "e")];
    const seen: string[] = [];
    const found: boolean[] = [];
    const job = (name: "repair" | "backfill"): Job => ({
      name,
      counts: {},
      async entry(e) {
        seen.push(`${name} ${e.path}`);
        found.push((await e.blob()) !== undefined);
      },
      async page(repository, entries) {
        seen.push(`${name} page of ${entries.length}`);
      },
    });
    const w = walk({ blobs, metadata: pages(rows, 100), jobs: [job("repair"), job("backfill")] });
    expect(await w.done).toBe("complete");
    const order = rows.map((r) => r.path).sort(comparePaths);
    expect(seen).toEqual([...order.flatMap((p) => [`repair ${p}`, `backfill ${p}`]), "repair page of 12", "backfill page of 12"]);
    expect(found.every(Boolean)).toBe(true);
    expect(heads).toBe(11);
    expect(w.progress).toEqual({ entries: 12, bytes: rows.reduce((n, r) => n + r.size, 0), blobs: 0, problems: { count: 0, first: [] } });
  });

  it("says when it has seen the last row at or under each folder, though a folder's rows and its subfolders' come interleaved in byte order", async () => {
    const events: string[] = [];
    const w = walk({
      metadata: pages(["a/1", "a/b/c", "a/d", "a.txt", "b/x/y/z", "b/x1"].map((p) => meta(p))),
      jobs: [{ name: "retention", counts: {}, entry: async (e) => void events.push(e.path), leaveFolder: async (r, f) => void events.push(`leave "${f}"`) }],
    });
    await w.done;
    // "a.txt" before "a/1": "." sorts before "/".
    expect(events).toEqual(["a.txt", "a/1", "a/b/c", 'leave "a/b"', "a/d", 'leave "a"', "b/x/y/z", 'leave "b/x/y"', 'leave "b/x"', "b/x1", 'leave "b"', 'leave ""']);
  });

  it("stops between entries when told to", async () => {
    let seen = 0;
    const w = walk({ metadata: pages([meta("a"), meta("b")]), jobs: [{ name: "repair", counts: {}, entry: async () => void seen++ }], shouldStop: () => seen >= 1 });
    expect(await w.done).toBe("stopped");
    expect(seen).toBe(1);
  });

  it("hands the staged leftovers, then the blob listing a page at a time (each page, then its blobs), then the index, to the jobs that want them", async () => {
    const m = memoryBlobStore();
    for (const n of ["upload-1", "upload-2", "upload-3"]) m.stageLeftover(n, "partial", 0);
    const digests = ["one", "two", "three"].map((c) => m.plant(c)).sort();
    const seen: string[] = [];
    const w = walk({
      blobs: m.store,
      pageSize: 2,
      metadata: pages([meta("x.txt")]),
      jobs: [
        {
          name: "reclaim",
          counts: {},
          staged: async (s) => void seen.push(`staged ${s.name} ${s.size}`),
          blobPage: async (page) => void seen.push(`page ${page.map((b) => digests.indexOf(b.sha256)).join(",")}`),
          blob: async (b) => void seen.push(`blob ${digests.indexOf(b.sha256)} ${b.size}`),
          entry: async (e) => void seen.push(`entry ${e.path}`),
        },
      ],
    });
    await w.done;
    const size = (i: number) => (["one", "two", "three"].find((c) => sha(c) === digests[i]) ?? "").length;
    expect(seen).toEqual(["staged upload-1 7", "staged upload-2 7", "staged upload-3 7", "page 0,1", `blob 0 ${size(0)}`, `blob 1 ${size(1)}`, "page 2", `blob 2 ${size(2)}`, "entry x.txt"]);
    expect(w.progress).toMatchObject({ entries: 1, blobs: 3 });
  });

  it("lists no blob when no job wants them", async () => {
    const m = memoryBlobStore();
    m.plant("content");
    const w = walk({ blobs: m.store, jobs: [{ name: "retention", counts: {}, entry: async () => {} }] });
    await w.done;
    expect(w.progress.blobs).toBe(0);
  });

  it("passes by a row another service refuses and a repository whose index it refuses, records each, and walks the rest", async () => {
    const seen: string[] = [];
    const w = walk({
      repositories: [{ name: "gone", format: "raw", retention: null }, libs],
      metadata: (repository) =>
        repository === "gone"
          ? (async function* () {
              throw new InternalCallError("artifacts service answered 404 to GET /internal/repositories/gone/artifacts", 404);
            })()
          : pages([meta("a.txt"), meta("bad.txt"), meta("c.txt")])(),
      jobs: [
        {
          name: "repair",
          counts: {},
          entry: async (e) => {
            if (e.path === "bad.txt") throw new InternalCallError("artifacts service answered 400 to POST /internal/artifacts/forget: path too long", 400);
            seen.push(e.path);
          },
        },
      ],
    });
    expect(await w.done).toBe("complete");
    expect(seen).toEqual(["a.txt", "c.txt"]);
    expect(w.progress.problems).toEqual({
      count: 2,
      first: [
        { repository: "gone", path: null, detail: expect.stringContaining("404") },
        { repository: "libs", path: "bad.txt", detail: expect.stringMatching(/^repair: .*400.*path too long/) },
      ],
    });
  });

  it("hands a page the other service refuses as a whole again a row at a time, so the row at fault is named and the others are done", async () => {
    const done: string[] = [];
    const w = walk({
      metadata: pages([meta("a.txt"), meta("bad.txt"), meta("c.txt")]),
      jobs: [
        {
          name: "backfill",
          counts: {},
          page: async (repository, entries) => {
            if (entries.some((e) => e.path === "bad.txt")) throw new InternalCallError("artifacts service answered 400 to POST /internal/repositories/libs/backfill: path too long", 400);
            done.push(...entries.map((e) => e.path));
          },
        },
      ],
    });
    expect(await w.done).toBe("complete");
    expect(done).toEqual(["a.txt", "c.txt"]);
    expect(w.progress.problems).toEqual({ count: 1, first: [{ repository: "libs", path: "bad.txt", detail: expect.stringMatching(/^backfill: .*400.*path too long/) }] });
  });

  it("records a blob the store fails to read and walks on", async () => {
    const m = memoryBlobStore();
    const digests = ["one", "two"].map((c) => m.plant(c)).sort();
    const checked: string[] = [];
    const w = walk({
      blobs: m.store,
      jobs: [
        {
          name: "repair",
          counts: {},
          blob: async (b) => {
            if (b.sha256 === digests[0]) throw Object.assign(new Error(`EIO: i/o error, read`), { code: "EIO", syscall: "read" });
            checked.push(b.sha256);
          },
        },
      ],
    });
    expect(await w.done).toBe("complete");
    expect(checked).toEqual([digests[1]]);
    expect(w.progress.problems.first).toEqual([{ repository: null, path: `blobs/sha256/${digests[0]}`, detail: "repair: EIO: i/o error, read" }]);
  });

  it("still fails as a whole when the other service does not answer at all", async () => {
    const w = walk({
      metadata: pages([meta("a.txt")]),
      jobs: [{ name: "backfill", counts: {}, page: async () => { throw new InternalCallError("artifacts service did not answer", undefined); } }],
    });
    await expect(w.done).rejects.toThrow("did not answer");
  });
});
