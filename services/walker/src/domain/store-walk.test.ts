import { createHash } from "node:crypto";
import { linkSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Job, MetaInfo, StoreEntry } from "./job-types.js";
import { InternalCallError } from "@svc/kit";
import { comparePaths, mergeWithMetadata, newProgress, readTree, walkStore } from "./store-walk.js";

const sha = (s: string) => createHash("sha256").update(s).digest("hex");
const meta = (path: string, content = path): MetaInfo => ({ path, size: Buffer.byteLength(content), sha256: sha(content), updated: "2026-01-01T00:00:00.000Z", lastDownloaded: null, held: false });
async function* list<T>(items: T[]) {
  yield* items;
}

describe("one pass over the store", () => {
  let root: string;
  const put = (rel: string, content = rel) => {
    const p = join(root, "repositories", "libs", ...rel.split("/"));
    mkdirSync(join(p, ".."), { recursive: true });
    writeFileSync(p, content);
  };
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), "store-walk-"));
    mkdirSync(join(root, "tmp"), { recursive: true });
    mkdirSync(join(root, "repositories", "libs"), { recursive: true });
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it("reads files in byte order of the full path, the order Postgres pages them in with COLLATE \"C\"", async () => {
    const names = ["a/x", "a-b", "a.txt", "a0", "a/b/c", "a b", "Z", "é/1", "e", "a/b.txt", "b/a/a"];
    for (const n of names) put(n);
    const seen: string[] = [];
    for await (const item of readTree(join(root, "repositories", "libs"))) if (item.type === "file") seen.push(item.path);
    expect(seen).toEqual([...names].sort(comparePaths));
  });

  it("marks leaving each folder after its last descendant, with the folder's own entry count", async () => {
    put("a/b/c");
    put("a/d");
    mkdirSync(join(root, "repositories", "libs", "empty"));
    const items: string[] = [];
    for await (const item of readTree(join(root, "repositories", "libs"))) items.push(item.type === "file" ? item.path : `leave(${item.folder}:${item.children})`);
    expect(items).toEqual(["a/b/c", "leave(a/b:1)", "a/d", "leave(a:2)", "leave(empty:0)", "leave(:2)"]);
  });

  it("joins the tree with the metadata: each path once, with what the disk and the index each know", async () => {
    put("a/1");
    put("a/3");
    const items = [];
    for await (const i of mergeWithMetadata(readTree(join(root, "repositories", "libs")), list([meta("a/0"), meta("a/1"), meta("a/2"), meta("z")]))) {
      items.push(i.type === "leave" ? `leave ${i.folder}` : `${i.path}${i.file ? " file" : ""}${i.meta ? " meta" : ""}`);
    }
    expect(items).toEqual(["a/0 meta", "a/1 file meta", "a/2 meta", "a/3 file", "leave a", "leave ", "z meta"]);
  });

  it("hands each entry to every job and reads a file once for all of them", async () => {
    put("x.txt", "content");
    const digests: (string | undefined)[] = [];
    const job = (name: "repair" | "backfill"): Job => ({
      name,
      counts: {},
      async entry(e: StoreEntry) {
        digests.push(await e.sha256());
      },
    });
    const progress = newProgress();
    const r = await walkStore({ root, repositories: [{ name: "libs", format: "raw", retention: null }], metadata: () => list([]), jobs: [job("repair"), job("backfill")], shouldStop: () => false, progress });
    expect(r).toBe("complete");
    expect(digests).toEqual([sha("content"), sha("content")]);
    expect(progress).toEqual({ entries: 1, bytes: 7, problems: { count: 0, first: [] } });
  });

  it("stops between entries when told to", async () => {
    put("a");
    put("b");
    let seen = 0;
    const r = await walkStore({
      root,
      repositories: [{ name: "libs", format: "raw", retention: null }],
      metadata: () => list([]),
      jobs: [{ name: "repair", counts: {}, entry: async () => void seen++ }],
      shouldStop: () => seen >= 1,
      progress: newProgress(),
    });
    expect(r).toBe("stopped");
    expect(seen).toBe(1);
  });

  it("gives temporary uploads to the jobs that want them", async () => {
    writeFileSync(join(root, "tmp", "upload-1"), "partial");
    const temps: string[] = [];
    await walkStore({
      root,
      repositories: [],
      metadata: () => list([]),
      jobs: [{ name: "reclaim", counts: {}, temp: async (t) => void temps.push(`${t.name}:${t.size}`) }],
      shouldStop: () => false,
      progress: newProgress(),
    });
    expect(temps).toEqual(["upload-1:7"]);
  });

  it("gives the blobs, with their link counts, to the jobs that want them after tmp/ and before the repositories", async () => {
    const blob = (content: string) => {
      const p = join(root, "blobs", "sha256", sha(content).slice(0, 2), sha(content));
      mkdirSync(join(p, ".."), { recursive: true });
      writeFileSync(p, content);
      return p;
    };
    blob("orphan");
    linkSync(blob("held"), join(root, "repositories", "libs", "held.txt"));
    // Not the store's: passed by.
    writeFileSync(join(root, "blobs", "sha256", sha("held").slice(0, 2), "notes.txt"), "x");
    writeFileSync(join(root, "tmp", "upload-1"), "partial");
    const seen: string[] = [];
    await walkStore({
      root,
      repositories: [{ name: "libs", format: "raw", retention: null }],
      metadata: () => list([]),
      jobs: [
        {
          name: "reclaim",
          counts: {},
          temp: async (t) => void seen.push(`temp ${t.name}`),
          blob: async (b) => void seen.push(`blob ${b.sha256 === sha("orphan") ? "orphan" : "held"} ${b.nlink} ${b.size}`),
          entry: async (e) => void seen.push(`entry ${e.path}`),
        },
      ],
      shouldStop: () => false,
      progress: newProgress(),
    });
    // In digest order.
    const blobs = sha("held") < sha("orphan") ? ["blob held 2 4", "blob orphan 1 6"] : ["blob orphan 1 6", "blob held 2 4"];
    expect(seen).toEqual(["temp upload-1", ...blobs, "entry held.txt"]);
  });

  it("passes by an entry another service refuses and a repository whose metadata it refuses, records each, and walks the rest", async () => {
    put("a.txt");
    put("bad.txt");
    put("c.txt");
    const seen: string[] = [];
    const progress = newProgress();
    const r = await walkStore({
      root,
      repositories: [
        { name: "gone", format: "raw", retention: null },
        { name: "libs", format: "raw", retention: null },
      ],
      metadata: (repository) =>
        repository === "gone"
          ? (async function* () {
              throw new InternalCallError("artifacts service answered 404 to GET /internal/repositories/gone/artifacts", 404);
            })()
          : list([]),
      jobs: [
        {
          name: "backfill",
          counts: {},
          entry: async (e) => {
            if (e.path === "bad.txt") throw new InternalCallError("artifacts service answered 400 to POST /internal/artifacts/index: path too long", 400);
            seen.push(e.path);
          },
        },
      ],
      shouldStop: () => false,
      progress,
    });
    expect(r).toBe("complete");
    expect(seen).toEqual(["a.txt", "c.txt"]);
    expect(progress.problems).toEqual({
      count: 2,
      first: [
        { repository: "gone", path: null, detail: expect.stringContaining("404") },
        { repository: "libs", path: "bad.txt", detail: expect.stringMatching(/^backfill: .*400.*path too long/) },
      ],
    });
  });

  it("still fails as a whole when the other service does not answer at all", async () => {
    put("a.txt");
    const walk = walkStore({
      root,
      repositories: [{ name: "libs", format: "raw", retention: null }],
      metadata: () => list([]),
      jobs: [{ name: "backfill", counts: {}, entry: async () => { throw new InternalCallError("artifacts service did not answer", undefined); } }],
      shouldStop: () => false,
      progress: newProgress(),
    });
    await expect(walk).rejects.toThrow("did not answer");
  });
});
