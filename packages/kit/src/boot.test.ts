import { describe, expect, it } from "vitest";
import pino from "pino";
import { stopInOrder } from "./boot.js";

const log = pino({ level: "silent" });

describe("stopping a service", () => {
  it("runs every step in the order given and exits 0, even past a step that fails", async () => {
    const ran: string[] = [];
    const code = await stopInOrder(
      log,
      [
        async () => ran.push("http"),
        async () => {
          ran.push("worker");
          throw new Error("worker would not stop");
        },
        async () => ran.push("nats"),
        () => ran.push("database"),
      ],
      1000,
    );
    expect(code).toBe(0);
    expect(ran).toEqual(["http", "worker", "nats", "database"]);
  });

  it("exits 1 when the steps outlast the grace, without waiting for them", async () => {
    const started = Date.now();
    const code = await stopInOrder(log, [() => new Promise(() => {})], 50);
    expect(code).toBe(1);
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
