import { describe, expect, it } from "vitest";
import { LogRing } from "./logger.js";

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
