import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough, type Readable } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { FileSpool, HOLDBACK_BYTES } from "./file-spool.js";

const dir = mkdtempSync(join(tmpdir(), "file-spool-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What a reader has received so far (kept flowing), and how it ended. */
function collect(r: Readable) {
  const chunks: Buffer[] = [];
  const ended = new Promise<Buffer>((resolve, reject) => {
    r.on("data", (c: Buffer) => chunks.push(c));
    r.on("end", () => resolve(Buffer.concat(chunks)));
    r.on("error", reject);
  });
  ended.catch(() => {});
  return { got: () => Buffer.concat(chunks), ended };
}

const until = async (ok: () => boolean) => {
  while (!ok()) await new Promise((r) => setTimeout(r, 5));
};

/** A source piped through the spool's tap into a consumer that reads it all (the store's side). */
function tapped(spool: FileSpool) {
  const source = new PassThrough();
  const store = collect(source.pipe(spool.tap()));
  return { source, store };
}

describe("file spool", () => {
  it("gives a reader the bytes as they arrive, all but the last until the file is stored, then the end", async () => {
    const spool = await FileSpool.create(dir, { size: 10, holdback: 1 });
    expect(readdirSync(dir)).toEqual([]);
    const { source, store } = tapped(spool);
    const first = collect(spool.reader()!);
    source.write(Buffer.from("hello"));
    await until(() => first.got().length === 4);
    expect(first.got().toString()).toBe("hell");
    source.end(Buffer.from("world"));
    expect((await store.ended).toString()).toBe("helloworld");
    await until(() => first.got().length === 9);
    // A reader that joins now gets everything from the first byte.
    const late = collect(spool.reader()!);
    spool.settle();
    expect((await first.ended).toString()).toBe("helloworld");
    expect((await late.ended).toString()).toBe("helloworld");
    expect(spool.size).toBe(10);
  });

  it("breaks every reader off when the fetch fails at its end, and gives no reader afterwards", async () => {
    const spool = await FileSpool.create(dir, { holdback: 1 });
    const { source, store } = tapped(spool);
    const reader = collect(spool.reader()!);
    source.end(Buffer.from("tampered"));
    await store.ended;
    spool.settle(new Error("the digest does not match"));
    await expect(reader.ended).rejects.toThrow(/digest/);
    expect(reader.got().length).toBeLessThan("tampered".length);
    expect(spool.reader()).toBeUndefined();
  });

  it("a reader that does not read stalls neither the store's side nor another reader", async () => {
    const spool = await FileSpool.create(dir, { holdback: 1 });
    const { source, store } = tapped(spool);
    const stuck = spool.reader()!; // never read
    const reading = collect(spool.reader()!);
    const big = Buffer.alloc(4 * 1024 * 1024, 7);
    source.end(big);
    expect((await store.ended).length).toBe(big.length);
    spool.settle();
    expect((await reading.ended).equals(big)).toBe(true);
    // The one that never read still gets it all when it does.
    expect((await collect(stuck).ended).equals(big)).toBe(true);
    // Once settled and every reader done, the spool is gone: the stored file is served instead.
    await until(() => spool.reader() === undefined);
  });

  it("gives a reader nothing of a file smaller than what it keeps back until it is stored, so a refusal of it reaches no reader's bytes", async () => {
    const spool = await FileSpool.create(dir);
    const { source, store } = tapped(spool);
    const reader = collect(spool.reader()!);
    source.end(Buffer.alloc(HOLDBACK_BYTES - 1, 1));
    await store.ended;
    spool.settle(new Error("the digest does not match"));
    await expect(reader.ended).rejects.toThrow(/digest/);
    expect(reader.got().length).toBe(0);
    expect(spool.sent).toBe(0);
  });
});
