import { createHash, randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { ServiceError } from "@svc/contracts";
import { readNpmDocument, type IncomingTarball, type NpmDocumentLimits } from "./npm-document-reader.js";

/** A body arriving in pieces of `size` bytes. */
const body = (text: string | Buffer, size = 7) => {
  const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text);
  const parts: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += size) parts.push(bytes.subarray(at, at + size));
  return Readable.from(parts, { objectMode: false });
};

/** Reads a document, collecting its tarball's bytes. */
async function read(text: string | Buffer, size?: number, limits?: NpmDocumentLimits) {
  let tarball: { name: string; bytes: Promise<Buffer> } | undefined;
  const onTarball = (t: IncomingTarball) => {
    tarball = { name: t.name, bytes: (async () => Buffer.concat(await t.content.toArray()))() };
  };
  const out = await readNpmDocument(body(text, size), { onTarball, ...(limits ? { limits } : {}) });
  return { ...out, name: tarball?.name, bytes: await tarball?.bytes };
}

/** The refusal a read ends in: its code and message. */
const refusal = (p: Promise<unknown>): Promise<{ code: string; message: string }> =>
  p.then(
    () => expect.fail("the document was not refused"),
    (e: unknown) => (expect(e).toBeInstanceOf(ServiceError), { code: (e as ServiceError).code, message: (e as ServiceError).message }),
  );

const sha = (algo: string, b: Buffer, enc: "hex" | "base64") => createHash(algo).update(b).digest(enc);

describe("reading an npm document as it arrives", () => {
  const manifest = { name: "p", version: "1.0.0", description: "é ü \u2603 \ud83d\ude00 \"quoted\" \\ back", dependencies: { a: "^1.0.0" }, bin: { p: "cli.js" }, engines: { node: ">=20" }, dist: { shasum: "x" }, scripts: { test: "t" }, cpu: ["x64", "arm64"], directories: { lib: "lib", n: 1.5e3, t: true, f: false, z: null }, deprecated: "no" };

  it("builds the fields it reads, the same whatever pieces the body arrives in, in objects without a prototype", async () => {
    const doc = { _id: "p", name: "p", "dist-tags": { latest: "1.0.0" }, versions: { "1.0.0": { ...manifest, files: ["a"], publishConfig: { x: 1 } } }, access: null, time: { x: "y" }, readme: "r" };
    const text = JSON.stringify(doc, null, 1);
    for (const size of [1, 2, 3, 5, 64, 100_000]) {
      const { document } = await read(text, size);
      expect(JSON.parse(JSON.stringify(document))).toEqual({ name: "p", "dist-tags": { latest: "1.0.0" }, versions: { "1.0.0": manifest }, readme: "r" });
      expect(Object.getPrototypeOf(document)).toBeNull();
      expect(Object.getPrototypeOf(document.versions)).toBeNull();
    }
  });

  it("keeps a key named __proto__ as a key: no object's prototype is set by what a client sends", async () => {
    const { document } = await read('{"name":"p","dist-tags":{"__proto__":{"polluted":1},"constructor":"1.0.0"},"versions":{"__proto__":{"name":"x"}}}');
    const tags = document["dist-tags"] as Record<string, unknown>;
    expect(Object.getPrototypeOf(tags)).toBeNull();
    expect(Object.keys(tags)).toEqual(["__proto__", "constructor"]);
    expect(Object.keys(document.versions as object)).toEqual(["__proto__"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("streams the tarball out of the document, decoded, with its digests, before or after the versions, whatever the pieces", async () => {
    const tgz = randomBytes(100_003);
    const b64 = tgz.toString("base64");
    // As npm sends it, as yarn 4 does (tarball first), and base64 broken into lines with escapes.
    const docs = [
      JSON.stringify({ name: "p", versions: { "1.0.0": manifest }, _attachments: { "p-1.0.0.tgz": { content_type: "application/octet-stream", data: b64, length: tgz.length } } }),
      JSON.stringify({ _id: "p", _attachments: { "p-1.0.0.tgz": { data: b64, length: tgz.length, other: "dropped" } }, name: "p", versions: { "1.0.0": manifest } }),
      JSON.stringify({ name: "p", versions: { "1.0.0": manifest }, _attachments: { "p-1.0.0.tgz": { data: b64.replace(/.{76}/g, "$&\n").replace(/\//g, "\\/") } } }),
    ];
    for (const doc of docs) {
      for (const size of [1000, 4093, 65536]) {
        const out = await read(doc, size);
        expect(out.name).toBe("p-1.0.0.tgz");
        expect(out.bytes!.equals(tgz)).toBe(true);
        expect(out.tarball).toEqual({ size: tgz.length, sha1: sha("sha1", tgz, "hex"), sha512: sha("sha512", tgz, "base64") });
        const att = (out.document._attachments as Record<string, Record<string, unknown>>)["p-1.0.0.tgz"]!;
        expect(att.data).toBeUndefined();
        expect(att.other).toBeUndefined();
        expect((out.document.versions as Record<string, unknown>)["1.0.0"]).toMatchObject({ name: "p", version: "1.0.0" });
      }
    }
  });

  it("reads past a tarball nobody asked for (an edit), counting it as document", async () => {
    const text = JSON.stringify({ name: "p", versions: {}, _attachments: { "p.tgz": { data: "QUJD" } } });
    const { document, tarball } = await readNpmDocument(body(text));
    expect(tarball).toBeUndefined();
    expect(document._attachments).toEqual({ "p.tgz": {} });
  });

  it("refuses a second tarball, a body that is no JSON object, and JSON that is cut or followed by more", async () => {
    const two = JSON.stringify({ _attachments: { "a.tgz": { data: "QUJD" }, "b.tgz": { data: "QUJD" } } });
    expect(await refusal(read(two))).toEqual({ code: "invalid_input", message: "a publish carries exactly one tarball in _attachments" });
    for (const text of ["[1]", '"s"', "12", "null"]) expect((await refusal(read(text))).message).toBe("the body must be a JSON object");
    for (const text of ["", '{"name":"p"', '{"name":"p"}x', "{name: 1}"]) expect((await refusal(read(text))).message).toMatch(/^the body is not valid JSON/);
  });

  it("once two versions are seen (an edit sent back), keeps of each only its deprecation", async () => {
    const { document } = await read(JSON.stringify({ name: "p", versions: { "1.0.0": { ...manifest, deprecated: "old" }, "1.1.0": manifest, "1.2.0": { name: "p" } } }));
    expect(JSON.parse(JSON.stringify(document.versions))).toEqual({ "1.0.0": { deprecated: "old" }, "1.1.0": { deprecated: "no" }, "1.2.0": {} });
  });

  describe("limits (413, naming what is over)", () => {
    const limits: NpmDocumentLimits = { documentBytes: 4096, manifestBytes: 2048, fieldBytes: 1024 };
    const tgz = randomBytes(64 * 1024);
    const publish = (m: object, extra: object = {}) => JSON.stringify({ name: "p", ...extra, versions: { "1.0.0": { name: "p", version: "1.0.0", ...m } }, _attachments: { "p-1.0.0.tgz": { data: tgz.toString("base64") } } });

    it("a field of a manifest, the readme included, and one of the document's own", async () => {
      expect(await refusal(read(publish({ readme: "r".repeat(1100) }), 100, limits))).toEqual({ code: "payload_too_large", message: 'versions["1.0.0"].readme is over the 1 KiB limit of one field of an npm document: nothing was stored' });
      expect((await refusal(read(publish({ dependencies: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`d${i}`, "1"])) }), 100, limits))).message).toMatch(/^versions\["1\.0\.0"\]\.dependencies is over/);
      // Fields not kept are capped too (they are dropped, but a client sending them learns why it was refused).
      expect((await refusal(read(publish({ bulk: "b".repeat(2000) }), 100, limits))).message).toMatch(/^versions\["1\.0\.0"\]\.bulk is over/);
      expect((await refusal(read(publish({}, { readme: "r".repeat(1100) }), 100, limits))).message).toMatch(/^readme is over/);
    });

    it("a manifest, whatever its fields", async () => {
      const m = Object.fromEntries(Array.from({ length: 4 }, (_, i) => [`description${i}`, "d".repeat(600)]));
      expect((await refusal(read(publish(m), 100, limits))).message).toBe('the manifest of version "1.0.0" is over the 2 KiB limit: nothing was stored');
    });

    it("the document without its tarball, which is not counted: a tarball far over every limit is read", async () => {
      const out = await read(publish({ description: "ok" }), 4096, limits);
      expect(out.bytes!.equals(tgz)).toBe(true);
      expect((await refusal(read(publish({}, { padding: "p".repeat(5000) }), 100, limits))).message).toBe("the npm document is over the 4 KiB limit (its tarball not counted): nothing was stored");
    });

    it("a refusal while the tarball is read fails its stream, and the rest of the body is left to drain", async () => {
      // Cut by a raw line break inside the base64 (not valid JSON) half-way through.
      const b64 = tgz.toString("base64");
      const source = body(`{"name":"p","_attachments":{"p.tgz":{"data":"${b64.slice(0, 40_000)}\n${b64.slice(40_000)}"}}}`, 512);
      let content: Readable | undefined;
      const refused = await refusal(readNpmDocument(source, { onTarball: (t) => (content = t.content.resume()), limits }));
      expect(refused.message).toMatch(/^the body is not valid JSON/);
      expect(content!.destroyed).toBe(true);
      // Read to its end and dropped, not destroyed half-way.
      if (!source.readableEnded) await new Promise((ended) => source.once("end", ended));
      expect(source.errored).toBeNull();
    });
  });

  it("stops reading when the tarball's store stops reading it", async () => {
    const tgz = randomBytes(4 * 1024 * 1024);
    const text = JSON.stringify({ name: "p", _attachments: { "p.tgz": { data: tgz.toString("base64") } } });
    const p = readNpmDocument(body(text, 65536), {
      onTarball: (t) => {
        t.content.once("data", () => t.content.destroy());
      },
    });
    await expect(p).rejects.toThrow("the tarball's store stopped reading it");
  });
});
