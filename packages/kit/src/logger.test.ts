import { describe, expect, it } from "vitest";
import { LazyChildLogger, LogRing, createLogger } from "./logger.js";

const line = (msg: string, extra = "") => `{"level":30,"time":"2026-01-01T00:00:00.000Z","service":"gateway"${extra},"msg":"${msg}"}`;
const accessLine = (n: number) => line("access", `,"category":"access","method":"GET","path":"/p/${n}","status":200`);

describe("the log ring", () => {
  it("keeps access lines apart: a burst of requests never pushes other entries out", () => {
    const ring = new LogRing(3, 5);
    ring.push(line("gateway ready"));
    ring.push(line("Redis is unreachable"));
    for (let i = 0; i < 50; i++) ring.push(accessLine(i));
    const others = ring.list(0, "other").map((e) => e.msg);
    expect(others).toEqual(["gateway ready", "Redis is unreachable"]);
    const access = ring.list(0, "access");
    expect(access.map((e) => e.path)).toEqual(["/p/45", "/p/46", "/p/47", "/p/48", "/p/49"]);
    expect(access[0]).toMatchObject({ category: "access", level: "INFO", service: "gateway", status: 200 });
  });

  it("lists both kinds in sequence order, after a cursor", () => {
    const ring = new LogRing();
    ring.push(line("a"));
    ring.push(accessLine(1));
    ring.push(line("b"));
    ring.push(accessLine(2));
    expect(ring.list().map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    expect(ring.list(2).map((e) => e.msg)).toEqual(["b", "access"]);
  });
});

describe("a request's logger", () => {
  it("writes lines with the request id, through a child made once, on first use", async () => {
    const { Writable } = await import("node:stream");
    const { createBaseApp } = await import("./service.js");
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(chunk.toString()), done()) });
    const { log } = createLogger("gateway", "info", sink);
    const app = createBaseApp({ log });
    // Lines are written once per turn of the event loop.
    const written = async () => (await new Promise((r) => setTimeout(r, 10)), lines.join("").split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>));
    app.get("/quiet", async () => ({ ok: true }));
    app.get("/says", async (request) => {
      request.log.info({ n: 1 }, "first");
      request.log.warn("second");
      return { level: request.log.level };
    });
    const quiet = await app.inject({ url: "/quiet" });
    expect(quiet.statusCode).toBe(200);
    expect(await written()).toEqual([]);
    const says = await app.inject({ url: "/says" });
    expect(says.json()).toEqual({ level: "info" });
    const [first, second, ...more] = await written();
    expect(more).toEqual([]);
    expect(first).toMatchObject({ level: 30, msg: "first", n: 1, service: "gateway", reqId: expect.any(String) });
    expect(second).toMatchObject({ level: 40, msg: "second", service: "gateway", reqId: first!.reqId });
    await app.close();
  });

  it("makes no child until a line is written", () => {
    let made = 0;
    const parent = { child: () => (made++, { info: () => {}, level: "info" }) };
    const log = new LazyChildLogger(parent, { reqId: "req-1" }, {});
    expect(made).toBe(0);
    log.info("x");
    log.info("y");
    expect(made).toBe(1);
  });
});
