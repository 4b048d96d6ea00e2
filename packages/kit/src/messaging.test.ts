import { describe, expect, it } from "vitest";
import { collectReplies, natsConnectOptions } from "./messaging.js";

const encode = (v: unknown) => ({ data: new TextEncoder().encode(JSON.stringify(v)) });

/** Replies as NATS hands them over, then a window that stays open until `close` is called. */
function replies(items: { data: Uint8Array }[]) {
  let close!: () => void;
  const closed = new Promise<void>((r) => (close = r));
  let ended = false;
  async function* source() {
    try {
      yield* items;
      await closed;
    } finally {
      ended = true;
    }
  }
  return { source: source(), close, ended: () => ended };
}

describe("collectReplies (the gathering of control answers)", () => {
  it("answers as soon as every expected node has replied, and ends the request", async () => {
    const r = replies([encode({ node: "auth@a" }), encode({ node: "stranger@x" }), encode({ node: "walker@b" })]);
    const got = await collectReplies(r.source, ["auth@a", "walker@b"]);
    expect(got).toEqual([{ node: "auth@a" }, { node: "stranger@x" }, { node: "walker@b" }]);
    expect(r.ended()).toBe(true);
  });

  it("waits the whole window while an expected node has not replied", async () => {
    const r = replies([encode({ node: "auth@a" })]);
    let done = false;
    const pending = collectReplies(r.source, ["auth@a", "walker@b"]).then((v) => ((done = true), v));
    await new Promise((res) => setImmediate(res));
    expect(done).toBe(false);
    r.close();
    expect(await pending).toEqual([{ node: "auth@a" }]);
  });

  it("without an expectation (or an empty one) collects until the window ends", async () => {
    for (const expectNodes of [undefined, []]) {
      const r = replies([encode({ node: "auth@a" })]);
      let done = false;
      const pending = collectReplies(r.source, expectNodes).then((v) => ((done = true), v));
      await new Promise((res) => setImmediate(res));
      expect(done).toBe(false);
      r.close();
      expect(await pending).toEqual([{ node: "auth@a" }]);
    }
  });

  it("leaves out a reply that does not parse", async () => {
    const r = replies([{ data: new TextEncoder().encode("{not json") }, encode({ node: "auth@a" })]);
    expect(await collectReplies(r.source, ["auth@a"])).toEqual([{ node: "auth@a" }]);
  });
});

describe("natsConnectOptions", () => {
  it("takes the user and password out of the URL into the client's options", () => {
    expect(natsConnectOptions("nats://svc:p%40ss@127.0.0.1:4222")).toEqual({ servers: ["nats://127.0.0.1:4222"], user: "svc", pass: "p@ss" });
  });

  it("leaves URLs without them as they are, every seed of a list", () => {
    expect(natsConnectOptions("nats://a:4222, nats://b:4222")).toEqual({ servers: ["nats://a:4222", "nats://b:4222"] });
    expect(natsConnectOptions("nats://a:4222,nats://u:p@b:4222")).toEqual({ servers: ["nats://a:4222", "nats://b:4222"], user: "u", pass: "p" });
  });
});
