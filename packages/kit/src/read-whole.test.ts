import { PassThrough, Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { readWhole } from "./read-whole.js";

describe("readWhole", () => {
  it("answers a body up to the limit whole", async () => {
    expect((await readWhole(Readable.from([Buffer.from("ab"), Buffer.from("cd")]), 4))?.toString()).toBe("abcd");
  });

  it("answers undefined past the limit and lets the rest flow to its end", async () => {
    const body = new PassThrough();
    const ended = new Promise((resolve) => body.once("end", resolve));
    const whole = readWhole(body, 3);
    body.write("ab");
    body.write("cd");
    body.end("ef");
    expect(await whole).toBeUndefined();
    await ended;
  });
});
