import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync, existsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { eventParsers, type ArtifactEvent } from "@svc/contracts";
import type { ArtifactRecord } from "../store/metadata-store.js";
import { artifactServiceFactory, type Address } from "./artifact-service.js";
import { filesystemBlobStore } from "@svc/blobs";

const sha = (s: string) => createHash("sha256").update(s).digest("hex");
const text = async (r: Readable | undefined) => {
  const chunks: Buffer[] = [];
  for await (const c of r ?? []) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString();
};
const addr = (path: string): Address => ({ repository: "libs", path, segments: path.split("/") });
const key = { kind: "key" as const, id: "f".repeat(64) };
const walker = { kind: "system" as const, id: "walker" };

/** The real blob store on a temporary folder; metadata and outbox in memory. */
async function setup(readOnly = false) {
  const root = mkdtempSync(join(tmpdir(), "artifact-service-"));
  const blobs = filesystemBlobStore({ root, readOnly });
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
    clashStatement: (r: string, p: string) => `C:${k(r, p)}`,
    clashOf: (found: Record<string, unknown>[]) => ({ parent: found[0]?.parent === true, folder: found[0]?.folder === true }),
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
    async lockBlob() {},
    async referenced(sha256: string) {
      return [...rows.values()].some((r) => r.sha256 === sha256);
    },
    async holding(sha256: string, after: { repository: string; path: string } | undefined, limit: number) {
      const all = [...rows.values()].filter((r) => r.sha256 === sha256).map((r) => ({ repository: r.repository, path: r.path }));
      all.sort((x, y) => (x.repository + "\0" + x.path < y.repository + "\0" + y.path ? -1 : 1));
      return all.filter((r) => !after || r.repository + "\0" + r.path > after.repository + "\0" + after.path).slice(0, limit);
    },
    async setHold(r: string, p: string, reason: string | null) {
      const row = rows.get(k(r, p))!;
      rows.set(k(r, p), { ...row, heldReason: reason });
    },
  };
  const svc = artifactServiceFactory({
    blobs,
    metadata,
    outbox: { addStatement: (e) => `E:${JSON.stringify(e)}` },
    deliver: async (e) => void delivered.push(e),
    tenant: "acme",
    indexing: async (_tx, a, at) => {
      indexed.push({ path: a.path, at: at.getTime(), had: rows.get(k(a.repository, a.path))?.sha256 });
      return true;
    },
  });
  return { root, blobs, rows, outbox, delivered, indexed, svc, failCommit: (v: boolean) => (failCommit = v), close: () => (closed = true) };
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
    expect(out).toEqual({ size: 5, sha256: sha("hello"), created: true, etag: `"${sha("hello")}"` });
    expect(t.rows.get("libs/a/b.txt")?.sha256).toBe(sha("hello"));
    expect(t.outbox).toHaveLength(1);
    const e = t.outbox[0]!;
    expect(eventParsers["artifact.published"](JSON.parse(JSON.stringify(e)))).toBeTruthy();
    expect(e).toMatchObject({ kind: "artifact.published", tenant: "acme", repository: "libs", path: "a/b.txt", size: 5, digest: `sha256:${sha("hello")}`, actor: key, replaced: false });
    expect(e.id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await sent(t))).toEqual([e]);

    await t.svc.publish(addr("a/b.txt"), Readable.from([Buffer.from("again")]), null, key);
    expect((await sent(t))[1]).toMatchObject({ kind: "artifact.published", replaced: true, size: 5, digest: `sha256:${sha("again")}` });
    // The content replaced, held by no other path, went with it.
    expect(await t.blobs.head(sha("hello"))).toBeUndefined();
    expect(await t.blobs.head(sha("again"))).toBeDefined();
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
    expect(t.rows.has("libs/absent.txt")).toBe(false);
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

  it("a body in memory is stored as a stream is, and the ETag answered is the content's digest", async () => {
    const out = await t.svc.publish(addr("mem/a.txt"), Buffer.from("in memory"), "text/plain", key);
    expect(out).toMatchObject({ size: 9, sha256: sha("in memory"), created: true, etag: `"${sha("in memory")}"` });
    expect(await text(await t.blobs.get(sha("in memory")))).toBe("in memory");
    // The same content again is the blob already stored.
    const again = await t.svc.publish(addr("mem/b.txt"), Buffer.from("in memory"), "text/plain", key);
    expect(again.etag).toBe(out.etag);
    expect(readdirSync(join(t.root, "tmp"))).toEqual([]);
  });

  it("content the store holds already is published without being read or written again; one gone meanwhile throws the caller's error", async () => {
    const { sha256, size } = await t.blobs.put(Readable.from([Buffer.from("a layer")]));
    const staged = vi.spyOn(t.blobs, "stage");
    const gone = () => new Error("the chunk is gone");
    const out = await t.svc.publish(addr("img/blobs/l"), { stored: { sha256, size }, gone }, null, key, { digests: { sha256: [{ hex: sha256, header: "digest" }] } });
    expect(out).toMatchObject({ size: 7, sha256: sha("a layer"), created: true });
    expect(staged).not.toHaveBeenCalled();
    expect(t.rows.get("libs/img/blobs/l")?.sha256).toBe(sha("a layer"));
    expect((await sent(t))[0]).toMatchObject({ kind: "artifact.published", path: "img/blobs/l", size: 7 });
    expect(readdirSync(join(t.root, "tmp"))).toEqual([]);

    await expect(t.svc.publish(addr("img/blobs/m"), { stored: { sha256, size }, gone }, null, key, { digests: { sha256: [{ hex: sha("other"), header: "digest" }] } })).rejects.toMatchObject({ status: 400, field: "digest" });
    await expect(t.svc.publish(addr("img/blobs/n"), { stored: { sha256: sha("never stored"), size: 12 }, gone }, null, key)).rejects.toThrow("the chunk is gone");
    expect(t.rows.has("libs/img/blobs/m") || t.rows.has("libs/img/blobs/n")).toBe(false);
  });

  it("a failed commit publishes nothing and leaves no upload behind in tmp/", async () => {
    t.failCommit(true);
    await expect(t.svc.publish(addr("x.txt"), Readable.from([Buffer.from("x")]), null, key)).rejects.toThrow("commit failed");
    expect(t.outbox).toHaveLength(0);
    expect((await sent(t))).toHaveLength(0);
  });

  it("in a repository being removed a publish answers 404 and stores nothing, and found content is not indexed", async () => {
    const { sha256 } = await t.blobs.put(Buffer.from("loose"));
    t.close();
    await expect(t.svc.publish(addr("late.txt"), Readable.from([Buffer.from("late")]), null, key)).rejects.toMatchObject({ status: 404, message: "no repository named libs" });
    expect(existsSync(join(t.root, "blobs/sha256", sha("late").slice(0, 2), sha("late")))).toBe(false);
    expect(readdirSync(join(t.root, "tmp"))).toEqual([]);
    expect(await t.svc.indexFound(addr("loose.txt"), { sha256, size: 5, at: new Date() }, async () => {})).toBe("missing");
    expect(t.rows.size).toBe(0);
    expect(t.outbox).toHaveLength(0);
  });

  it("a removal reports the size and digest of what was removed, with reason request", async () => {
    await t.svc.publish(addr("a/b.txt"), Readable.from([Buffer.from("hello")]), null, key);
    expect(await t.svc.remove(addr("a/b.txt"), key)).toBe(true);
    expect(t.rows.size).toBe(0);
    // No path holds the content any more: its blob went with it.
    expect(await t.blobs.head(sha("hello"))).toBeUndefined();
    expect((await sent(t))[1]).toMatchObject({ kind: "artifact.removed", reason: "request", size: 5, digest: `sha256:${sha("hello")}`, actor: key });
    expect(await t.svc.remove(addr("a/b.txt"), key)).toBe(false);
    expect((await sent(t))).toHaveLength(2);
  });

  it("a removal keeps the blob while another path holds the same content", async () => {
    await t.svc.publish(addr("one.txt"), Readable.from([Buffer.from("shared")]), null, key);
    await t.svc.publish(addr("two.txt"), Buffer.from("shared"), null, key);
    expect(await t.svc.remove(addr("one.txt"), key)).toBe(true);
    expect(await text(await t.blobs.get(sha("shared")))).toBe("shared");
    const row = t.rows.get("libs/two.txt")!;
    expect(await t.svc.removeForRetention(addr("two.txt"), { sha256: row.sha256, updated: row.updated.getTime() }, walker)).toEqual({ removed: true, size: 6 });
    expect(await t.blobs.head(sha("shared"))).toBeUndefined();
  });

  it("a path whose blob went behind the service's back is still removed by a DELETE", async () => {
    await t.svc.publish(addr("c.txt"), Readable.from([Buffer.from("c")]), null, key);
    await t.blobs.delete(sha("c"));
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

  it("indexFound fills a missing row (dated by the content found) and corrects one naming other content", async () => {
    const { sha256 } = await t.blobs.put(Buffer.from("index me"));
    const at = new Date(Date.now() - 3_600_000);
    let ensured = 0;
    const ensure = async () => void ensured++;
    expect(await t.svc.indexFound(addr("i.txt"), { sha256, size: 8, at }, ensure)).toBe("created");
    expect(t.rows.get("libs/i.txt")).toMatchObject({ size: 8, sha256 });
    expect(t.rows.get("libs/i.txt")!.updated.getTime()).toBe(at.getTime());
    expect(await t.svc.indexFound(addr("i.txt"), { sha256, size: 8, at }, ensure)).toBe("unchanged");
    t.rows.set("libs/i.txt", { ...t.rows.get("libs/i.txt")!, sha256: sha("stale"), size: 1 });
    expect(await t.svc.indexFound(addr("i.txt"), { sha256, size: 8, at }, ensure)).toBe("corrected");
    expect(t.rows.get("libs/i.txt")).toMatchObject({ size: 8, sha256 });
    expect(ensured).toBe(3);
    // The format's rows go in with a row created or corrected (dated by the content found), never otherwise.
    expect(t.indexed).toEqual([
      { path: "i.txt", at: at.getTime(), had: undefined },
      { path: "i.txt", at: at.getTime(), had: sha256 },
    ]);
    expect(await sent(t)).toHaveLength(0);
  });

  it("backfill runs the format's indexing step for paths the index holds, and counts what it filled", async () => {
    await t.svc.publish(addr("b/1.txt"), Readable.from([Buffer.from("one")]), null, key);
    expect(await t.svc.backfill("libs", [addr("b/1.txt"), addr("b/none.txt")])).toBe(1);
    expect(t.indexed.map((i) => i.path)).toEqual(["b/1.txt"]);
  });

  it("forget drops a row only when its blob is really gone, and reports the removal", async () => {
    await t.svc.publish(addr("f.txt"), Readable.from([Buffer.from("f")]), null, key);
    expect(await t.svc.forget(addr("f.txt"), walker)).toBe(false);
    await t.blobs.delete(sha("f"));
    expect(await t.svc.forget(addr("f.txt"), walker)).toBe(true);
    expect(t.rows.size).toBe(0);
    expect((await sent(t))[1]).toMatchObject({ kind: "artifact.removed", actor: walker, digest: `sha256:${sha("f")}` });
  });

  it("reclaim removes a blob only when nothing references it and it is older than the grace period", async () => {
    await t.svc.publish(addr("kept.txt"), Readable.from([Buffer.from("kept")]), null, key);
    const orphan = await t.blobs.put(Buffer.from("orphan"));
    expect(await t.svc.reclaim([sha("kept"), orphan.sha256, sha("absent")], 3_600_000)).toEqual([]);
    expect(await t.svc.reclaim([sha("kept"), orphan.sha256, sha("absent")], 0)).toEqual([{ sha256: orphan.sha256, size: 6 }]);
    expect(await t.blobs.head(orphan.sha256)).toBeUndefined();
    expect(await t.blobs.head(sha("kept"))).toBeDefined();
  });

  it("verifyBlob leaves an intact blob, and removes a corrupt one with every path that held it", async () => {
    await t.svc.publish(addr("v/1.txt"), Readable.from([Buffer.from("v")]), null, key);
    await t.svc.publish(addr("v/2.txt"), Readable.from([Buffer.from("v")]), null, key);
    const addressOf = (_r: string, p: string) => addr(p);
    expect(await t.svc.verifyBlob(sha("v"), walker, addressOf)).toEqual({ outcome: "intact", forgotten: [], forgottenCount: 0 });
    writeFileSync(join(t.root, "blobs/sha256", sha("v").slice(0, 2), sha("v")), "not v");
    expect(await t.svc.verifyBlob(sha("v"), walker, addressOf)).toEqual({
      outcome: "corrupt",
      forgotten: [
        { repository: "libs", path: "v/1.txt" },
        { repository: "libs", path: "v/2.txt" },
      ],
      forgottenCount: 2,
    });
    expect(t.rows.size).toBe(0);
    expect(await t.blobs.head(sha("v"))).toBeUndefined();
    expect((await sent(t)).slice(2).map((e) => e.kind)).toEqual(["artifact.removed", "artifact.removed"]);
    expect(await t.svc.verifyBlob(sha("v"), walker, addressOf)).toMatchObject({ outcome: "missing" });
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
