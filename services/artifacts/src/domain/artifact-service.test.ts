import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { eventParsers, type ArtifactEvent } from "@svc/contracts";
import type { ArtifactRecord } from "../store/metadata-store.js";
import { artifactServiceFactory, type Address } from "./artifact-service.js";
import { etagOf } from "./upload-checks.js";
import { fileStoreFactory } from "../store/file-store.js";

const sha = (s: string) => createHash("sha256").update(s).digest("hex");
const addr = (path: string): Address => ({ repository: "libs", path, segments: path.split("/") });
const key = { kind: "key" as const, id: "f".repeat(64) };
const walker = { kind: "system" as const, id: "walker" };

/** The real file store on a temporary folder; metadata and outbox in memory. */
async function setup(readOnly = false) {
  const root = mkdtempSync(join(tmpdir(), "artifact-service-"));
  const files = fileStoreFactory({ root, readOnly });
  await files.init(["libs"]);
  const rows = new Map<string, ArtifactRecord>();
  const outbox: ArtifactEvent[] = [];
  const delivered: ArtifactEvent[] = [];
  /** What the format's indexing step was called with (and the row it saw). */
  const indexed: { path: string; at: number; had: string | undefined }[] = [];
  let failCommit = false;
  let closed = false;
  const k = (r: string, p: string) => `${r}/${p}`;
  const metadata = {
    async transaction<T>(fn: (tx: never) => Promise<T>): Promise<T> {
      const before = new Map(rows);
      const outboxLength = outbox.length;
      try {
        const out = await fn(undefined as never);
        if (failCommit) throw new Error("commit failed");
        return out;
      } catch (err) {
        rows.clear();
        for (const [a, b] of before) rows.set(a, b);
        outbox.length = outboxLength;
        throw err;
      }
    },
    lockedTransaction<T>(_r: string, _p: string, fn: (tx: never, first: Record<string, unknown>[][]) => Promise<T>, opts: { lastStatement?: (result: T) => string | undefined; whenClosed?: () => T; withBegin?: string[] } = {}): Promise<T> {
      if (closed && opts.whenClosed) return Promise.resolve().then(opts.whenClosed);
      return metadata.transaction(async (tx) => {
        // findStatement's fake names the row it looks up.
        const first = (opts.withBegin ?? []).map((statement) => (statement.startsWith("F:") && rows.has(statement.slice(2)) ? [rows.get(statement.slice(2)) as unknown as Record<string, unknown>] : []));
        const out = await fn(tx, first);
        // The fakes' "statements" are their rows as JSON, tagged, applied with the commit.
        for (const statement of opts.lastStatement?.(out)?.split("; ") ?? []) {
          if (statement.startsWith("E:")) outbox.push(JSON.parse(statement.slice(2)) as ArtifactEvent);
          else await metadata.recordArtifact(JSON.parse(statement.slice(2), (key, v) => (key === "at" ? new Date(v as string) : v)));
        }
        return out;
      });
    },
    async find(r: string, p: string) {
      return rows.get(k(r, p));
    },
    findStatement: (r: string, p: string) => `F:${k(r, p)}`,
    recordOf: (found: Record<string, unknown>[]) => found[0] as ArtifactRecord | undefined,
    async recordArtifact(a: { repository: string; path: string; size: number; sha256: string; contentType: string | null; at?: Date }) {
      const had = rows.get(k(a.repository, a.path));
      rows.set(k(a.repository, a.path), { repository: a.repository, path: a.path, size: a.size, sha256: a.sha256, contentType: a.contentType, updated: a.at ?? new Date(), lastDownloaded: had?.lastDownloaded ?? null, downloads: had?.downloads ?? 0, heldReason: had?.heldReason ?? null });
    },
    recordStatement(a: { repository: string; path: string; size: number; sha256: string; contentType: string | null; at: Date }) {
      return `R:${JSON.stringify(a)}`;
    },
    async correctArtifact(a: { repository: string; path: string; size: number; sha256: string }) {
      const row = rows.get(k(a.repository, a.path))!;
      rows.set(k(a.repository, a.path), { ...row, size: a.size, sha256: a.sha256 });
    },
    async forgetArtifact(r: string, p: string) {
      const row = rows.get(k(r, p));
      rows.delete(k(r, p));
      return row;
    },
    async setHold(r: string, p: string, reason: string | null) {
      const row = rows.get(k(r, p))!;
      rows.set(k(r, p), { ...row, heldReason: reason });
    },
  };
  const svc = artifactServiceFactory({
    files,
    metadata,
    outbox: { addStatement: (e) => `E:${JSON.stringify(e)}` },
    deliver: async (e) => void delivered.push(e),
    tenant: "acme",
    indexing: async (_tx, a, at) => void indexed.push({ path: a.path, at: at.getTime(), had: rows.get(k(a.repository, a.path))?.sha256 }),
  });
  return { root, files, rows, outbox, delivered, indexed, svc, failCommit: (v: boolean) => (failCommit = v), close: () => (closed = true) };
}

/** The events delivered once the answer is on its way (delivery starts on the next turn of the loop). */
async function sent(t: { delivered: ArtifactEvent[] }): Promise<ArtifactEvent[]> {
  await new Promise((resolve) => setImmediate(resolve));
  return t.delivered;
}

describe("artifact changes and their events", () => {
  let t: Awaited<ReturnType<typeof setup>>;
  beforeEach(async () => {
    t = await setup();
  });
  afterEach(() => rmSync(t.root, { recursive: true, force: true }));

  it("a publish stores the file, its metadata and a published event in the outbox, then delivers it", async () => {
    const out = await t.svc.publish(addr("a/b.txt"), Readable.from([Buffer.from("hello")]), "text/plain", key);
    expect(out).toEqual({ size: 5, sha256: sha("hello"), created: true, etag: expect.stringMatching(/^W\/"5-[0-9a-f]+"$/) });
    expect(t.rows.get("libs/a/b.txt")?.sha256).toBe(sha("hello"));
    expect(t.outbox).toHaveLength(1);
    const e = t.outbox[0]!;
    expect(eventParsers["artifact.published"](JSON.parse(JSON.stringify(e)))).toBeTruthy();
    expect(e).toMatchObject({ kind: "artifact.published", tenant: "acme", repository: "libs", path: "a/b.txt", size: 5, digest: `sha256:${sha("hello")}`, actor: key, replaced: false });
    expect(e.id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await sent(t))).toEqual([e]);

    await t.svc.publish(addr("a/b.txt"), Readable.from([Buffer.from("again")]), null, key);
    expect((await sent(t))[1]).toMatchObject({ kind: "artifact.published", replaced: true, size: 5, digest: `sha256:${sha("again")}` });
  });

  it("a failed precondition (412) or a declared digest that does not match (400) stores nothing and keeps the old content", async () => {
    const first = await t.svc.publish(addr("p.txt"), Readable.from([Buffer.from("old")]), null, key);
    const put = (body: string, checks: Parameters<typeof t.svc.publish>[4]) => t.svc.publish(addr("p.txt"), Readable.from([Buffer.from(body)]), null, key, checks);
    await expect(put("new", { preconditions: { ifNoneMatch: "*" } })).rejects.toMatchObject({ status: 412 });
    await expect(put("new", { preconditions: { ifMatch: ['"not-it"'] } })).rejects.toMatchObject({ status: 412 });
    await expect(put("new", { digests: { sha256: [{ hex: sha("other"), header: "x-checksum-sha256" }] } })).rejects.toMatchObject({ status: 400, field: "x-checksum-sha256" });
    const md5 = createHash("md5").update("other").digest("hex");
    await expect(put("new", { digests: { md5: [{ hex: md5, header: "content-md5" }] } })).rejects.toMatchObject({ status: 400, field: "content-md5" });
    expect(t.rows.get("libs/p.txt")?.sha256).toBe(sha("old"));
    expect((await sent(t))).toHaveLength(1);

    // The ETag a GET answered (weak, compared as such) or the SHA-256 in quotes names the version.
    const second = await put("new", { preconditions: { ifMatch: [first.etag!.replace(/^W\//, "")] }, digests: { md5: [{ hex: createHash("md5").update("new").digest("hex"), header: "x-checksum-md5" }] } });
    expect(second.sha256).toBe(sha("new"));
    await expect(put("newer", { preconditions: { ifMatch: [`"${sha("old")}"`] } })).rejects.toMatchObject({ status: 412 });
    expect((await put("newer", { preconditions: { ifMatch: [`"${sha("new")}"`] } })).sha256).toBe(sha("newer"));
    expect((await t.svc.publish(addr("fresh.txt"), Readable.from([Buffer.from("f")]), null, key, { preconditions: { ifNoneMatch: "*" } })).created).toBe(true);
    await expect(t.svc.publish(addr("absent.txt"), Readable.from([Buffer.from("a")]), null, key, { preconditions: { ifMatch: "*" } })).rejects.toMatchObject({ status: 412 });
    expect(existsSync(join(t.root, "repositories/libs/absent.txt"))).toBe(false);
  });

  it("a refused publish leaves no blob of its content and nothing in tmp/, whether its body was a stream or in memory", async () => {
    await t.svc.publish(addr("held.txt"), Readable.from([Buffer.from("old")]), null, key);
    // Blob files (sha256/<ab>/<hex>), not the folders they are sorted into.
    const blobs = () => readdirSync(join(t.root, "blobs"), { recursive: true }).filter((f) => String(f).split("/").length === 3);
    const before = blobs();
    for (const body of [Readable.from([Buffer.from("unique content")]), Buffer.from("unique content")]) {
      await expect(t.svc.publish(addr("held.txt"), body, null, key, { preconditions: { ifNoneMatch: "*" } })).rejects.toMatchObject({ status: 412 });
      await expect(t.svc.publish(addr("held.txt"), body instanceof Buffer ? body : Readable.from([Buffer.from("unique content")]), null, key, { digests: { sha256: [{ hex: sha("other"), header: "x-checksum-sha256" }] } })).rejects.toMatchObject({ status: 400 });
    }
    expect(blobs()).toEqual(before);
    expect(readdirSync(join(t.root, "tmp"))).toEqual([]);
    expect(t.rows.get("libs/held.txt")?.sha256).toBe(sha("old"));
  });

  it("a publish whose address is known once its body is read lands there; one whose destination fails stores nothing", async () => {
    let seen: { size: number; sha256: string } | undefined;
    const out = await t.svc.publish(async (staged) => ((seen = staged), { address: addr("late/p-1.0.0.tgz") }), Readable.from([Buffer.from("tar"), Buffer.from("ball")]), null, key);
    expect(seen).toEqual({ size: 7, sha256: sha("tarball") });
    expect(out).toMatchObject({ size: 7, sha256: sha("tarball"), created: true });
    expect(t.rows.get("libs/late/p-1.0.0.tgz")?.sha256).toBe(sha("tarball"));
    expect((await sent(t))[0]).toMatchObject({ kind: "artifact.published", path: "late/p-1.0.0.tgz" });

    const refused = t.svc.publish(async () => Promise.reject(new Error("the document was refused")), Readable.from([Buffer.from("never stored")]), null, key);
    await expect(refused).rejects.toThrow("the document was refused");
    expect(readdirSync(join(t.root, "tmp"))).toEqual([]);
    expect(readdirSync(join(t.root, "blobs"), { recursive: true }).filter((f) => String(f).endsWith(sha("never stored")))).toEqual([]);
  });

  it("a body in memory is stored as a stream is, and the ETag answered is the placed file's", async () => {
    const out = await t.svc.publish(addr("mem/a.txt"), Buffer.from("in memory"), "text/plain", key);
    expect(out).toMatchObject({ size: 9, sha256: sha("in memory"), created: true });
    expect(await t.files.hash("libs", ["mem", "a.txt"])).toEqual({ size: 9, sha256: sha("in memory") });
    expect(out.etag).toBe(etagOf((await t.files.identity("libs", ["mem", "a.txt"]))!));
    // The same content again links the blob already stored: the answer still names the placed file.
    const again = await t.svc.publish(addr("mem/b.txt"), Buffer.from("in memory"), "text/plain", key);
    expect(again.etag).toBe(etagOf((await t.files.identity("libs", ["mem", "b.txt"]))!));
  });

  it("a failed commit publishes nothing and leaves no upload behind in tmp/", async () => {
    t.failCommit(true);
    await expect(t.svc.publish(addr("x.txt"), Readable.from([Buffer.from("x")]), null, key)).rejects.toThrow("commit failed");
    expect(t.outbox).toHaveLength(0);
    expect((await sent(t))).toHaveLength(0);
  });

  it("in a repository being removed a publish answers 404 and stores nothing, and a walk indexes nothing", async () => {
    await t.files.write("libs", ["loose.txt"], Readable.from([Buffer.from("loose")]));
    const loose = (await t.files.identity("libs", ["loose.txt"]))!;
    t.close();
    await expect(t.svc.publish(addr("late.txt"), Readable.from([Buffer.from("late")]), null, key)).rejects.toMatchObject({ status: 404, message: "no repository named libs" });
    expect(existsSync(join(t.root, "repositories/libs/late.txt"))).toBe(false);
    expect(existsSync(join(t.root, "blobs/sha256", sha("late").slice(0, 2), sha("late")))).toBe(false);
    expect(readdirSync(join(t.root, "tmp"))).toEqual([]);
    expect(await t.svc.index(addr("loose.txt"), loose, sha("loose"))).toBe("missing");
    expect(t.rows.size).toBe(0);
    expect(t.outbox).toHaveLength(0);
  });

  it("a removal reports the size and digest of what was removed, with reason request", async () => {
    await t.svc.publish(addr("a/b.txt"), Readable.from([Buffer.from("hello")]), null, key);
    expect(await t.svc.remove(addr("a/b.txt"), key)).toBe(true);
    expect(existsSync(join(t.root, "repositories/libs/a/b.txt"))).toBe(false);
    expect(t.rows.size).toBe(0);
    expect((await sent(t))[1]).toMatchObject({ kind: "artifact.removed", reason: "request", size: 5, digest: `sha256:${sha("hello")}`, actor: key });
    expect(await t.svc.remove(addr("a/b.txt"), key)).toBe(false);
    expect((await sent(t))).toHaveLength(2);
  });

  it("removing a file nothing indexed reads its digest from the file", async () => {
    await t.files.write("libs", ["loose.txt"], Readable.from([Buffer.from("loose")]));
    expect(await t.svc.remove(addr("loose.txt"), key)).toBe(true);
    expect((await sent(t))[0]).toMatchObject({ kind: "artifact.removed", size: 5, digest: `sha256:${sha("loose")}` });
  });

  it("a removal a crash interrupted (metadata left, file gone) is finished by the next DELETE", async () => {
    await t.svc.publish(addr("c.txt"), Readable.from([Buffer.from("c")]), null, key);
    rmSync(join(t.root, "repositories/libs/c.txt"));
    expect(await t.svc.remove(addr("c.txt"), key)).toBe(true);
    expect(t.rows.size).toBe(0);
  });

  it("retention removes only the version the walk saw, and never a held artifact", async () => {
    await t.svc.publish(addr("r/1.txt"), Readable.from([Buffer.from("one")]), null, key);
    const row = t.rows.get("libs/r/1.txt")!;
    expect(await t.svc.removeForRetention(addr("r/1.txt"), { sha256: sha("other"), updated: row.updated.getTime() }, walker)).toEqual({ removed: false, why: "changed" });
    await t.svc.hold(addr("r/1.txt"), "quarantine", key);
    expect(await t.svc.removeForRetention(addr("r/1.txt"), { sha256: row.sha256, updated: row.updated.getTime() }, walker)).toEqual({ removed: false, why: "held" });
    await t.svc.release(addr("r/1.txt"), "cleared", key);
    expect(await t.svc.removeForRetention(addr("r/1.txt"), { sha256: row.sha256, updated: row.updated.getTime() }, walker)).toEqual({ removed: true, size: 3 });
    expect((await sent(t)).map((e) => e.kind)).toEqual(["artifact.published", "artifact.held", "artifact.released", "artifact.removed"]);
    expect((await sent(t))[3]).toMatchObject({ reason: "retention", actor: walker });
    expect(await t.svc.removeForRetention(addr("r/1.txt"), { sha256: row.sha256, updated: row.updated.getTime() }, walker)).toEqual({ removed: false, why: "gone" });
  });

  it("index fills missing metadata and corrects wrong metadata, only for the file the walk read", async () => {
    await t.files.write("libs", ["i.txt"], Readable.from([Buffer.from("index me")]));
    const id = (await t.files.identity("libs", ["i.txt"]))!;
    expect(await t.svc.index(addr("i.txt"), { ...id, ino: id.ino + 1 }, sha("index me"))).toBe("changed");
    expect(await t.svc.index(addr("i.txt"), id, sha("index me"))).toBe("created");
    expect(t.rows.get("libs/i.txt")).toMatchObject({ size: 8, sha256: sha("index me") });
    expect(t.rows.get("libs/i.txt")!.updated.getTime()).toBe(id.mtimeMs);
    expect(await t.svc.index(addr("i.txt"), id, sha("index me"))).toBe("unchanged");
    t.rows.set("libs/i.txt", { ...t.rows.get("libs/i.txt")!, sha256: sha("stale"), size: 1 });
    expect(await t.svc.index(addr("i.txt"), id, sha("index me"))).toBe("corrected");
    expect(t.rows.get("libs/i.txt")).toMatchObject({ size: 8, sha256: sha("index me") });
    expect(await t.svc.index(addr("nothing.txt"), id, sha("x"))).toBe("missing");
    // The format's rows go in with a row created or corrected (dated by the file), never otherwise.
    expect(t.indexed).toEqual([
      { path: "i.txt", at: id.mtimeMs, had: undefined },
      { path: "i.txt", at: id.mtimeMs, had: sha("index me") },
    ]);
    expect(await sent(t)).toHaveLength(0);
  });

  it("forget drops metadata only when the file is really gone, and reports the removal", async () => {
    await t.svc.publish(addr("f.txt"), Readable.from([Buffer.from("f")]), null, key);
    expect(await t.svc.forget(addr("f.txt"), walker)).toBe(false);
    rmSync(join(t.root, "repositories/libs/f.txt"));
    expect(await t.svc.forget(addr("f.txt"), walker)).toBe(true);
    expect((await sent(t))[1]).toMatchObject({ kind: "artifact.removed", actor: walker, digest: `sha256:${sha("f")}` });
  });

  it("hold, release and finding events carry the artifact's digest; holding twice for one reason is one event", async () => {
    await t.svc.publish(addr("h.txt"), Readable.from([Buffer.from("h")]), null, key);
    expect(await t.svc.hold(addr("h.txt"), "malware", walker)).toMatchObject({ kind: "artifact.held", reason: "malware" });
    expect(await t.svc.hold(addr("h.txt"), "malware", walker)).toBeUndefined();
    const f = await t.svc.recordFinding(addr("h.txt"), { type: "malware", severity: "critical", summary: "EICAR test file" }, walker);
    expect(eventParsers["artifact.finding"](JSON.parse(JSON.stringify(f)))).toBeTruthy();
    expect(await t.svc.release(addr("h.txt"), "false positive", key)).toMatchObject({ kind: "artifact.released" });
    expect(await t.svc.release(addr("h.txt"), "again", key)).toBeUndefined();
    await expect(t.svc.hold(addr("none.txt"), "x", key)).rejects.toThrow(/no artifact/);
  });

  it("a read-only store refuses removals before touching anything", async () => {
    const ro = await setup(true);
    try {
      await expect(ro.svc.remove(addr("x.txt"), key)).rejects.toMatchObject({ status: 403 });
      await expect(ro.svc.publish(addr("x.txt"), Readable.from([Buffer.from("x")]), null, key)).rejects.toMatchObject({ status: 403 });
    } finally {
      rmSync(ro.root, { recursive: true, force: true });
    }
  });
});

describe("file store", () => {
  it("a write renames into a folder a walk tidied away meanwhile", async () => {
    const root = mkdtempSync(join(tmpdir(), "file-store-"));
    try {
      const files = fileStoreFactory({ root, readOnly: false });
      await files.init(["libs"]);
      const prepared = await files.prepare(await files.stage(Readable.from([Buffer.from("x")])));
      await files.place(prepared, "libs", ["deep", "er", "y.txt"]).then((p) => p.flushed);
      // A walk tidies the folder away while the next write of it is on its way.
      rmSync(join(root, "repositories/libs/deep"), { recursive: true });
      const placed = await files.place(await files.prepare(await files.stage(Buffer.from("x"))), "libs", ["deep", "er", "x.txt"]);
      await placed.flushed;
      expect(placed.created).toBe(true);
      expect(await files.hash("libs", ["deep", "er", "x.txt"])).toEqual({ size: 1, sha256: sha("x") });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("a write linked to its blob and then dropped leaves no blob or upload behind", async () => {
    const root = mkdtempSync(join(tmpdir(), "file-store-"));
    try {
      const files = fileStoreFactory({ root, readOnly: false });
      await files.init(["libs"]);
      const prepared = await files.prepare(await files.stage(Buffer.from("dropped")));
      await files.discard(prepared);
      expect(readdirSync(join(root, "repositories/libs"))).toEqual([]);
      expect(readdirSync(join(root, "tmp"))).toEqual([]);
      expect(readdirSync(join(root, "blobs"), { recursive: true }).filter((f) => String(f).split("/").length === 3)).toEqual([]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
