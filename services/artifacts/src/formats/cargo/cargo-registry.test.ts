import { PassThrough, Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { readExactly } from "./cargo-registry.js";

describe("reading cargo's publish framing off a body as it arrives", () => {
  it("takes the bytes asked for across chunks and leaves the rest in the body", async () => {
    const body = Readable.from([Buffer.from("ab"), Buffer.from("cdef"), Buffer.from("gh")], { objectMode: false });
    expect((await readExactly(body, 3))?.toString()).toBe("abc");
    expect((await readExactly(body, 2))?.toString()).toBe("de");
    const rest: Buffer[] = [];
    for await (const c of body) rest.push(c as Buffer);
    expect(Buffer.concat(rest).toString()).toBe("fgh");
  });

  it("answers undefined for a body that ends short, once the rest of it has arrived", async () => {
    const body = new PassThrough();
    body.write("abcde");
    const read = readExactly(body, 100);
    setTimeout(() => body.end("f"), 20);
    expect(await read).toBeUndefined();
  });
});
