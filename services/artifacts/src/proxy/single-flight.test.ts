import { describe, expect, it } from "vitest";
import { SingleFlight } from "./single-flight.js";

describe("single flight", () => {
  it("makes one fetch for any number of concurrent callers of one key", async () => {
    const flight = new SingleFlight<string>();
    let fetches = 0;
    let release!: (v: string) => void;
    const gate = new Promise<string>((r) => (release = r));
    const callers = Array.from({ length: 20 }, () => flight.run("a", () => { fetches++; return gate; }));
    expect(flight.size).toBe(1);
    release("bytes");
    expect(await Promise.all(callers)).toEqual(Array(20).fill("bytes"));
    expect(fetches).toBe(1);
    expect(flight.size).toBe(0);
  });

  it("keeps keys apart and retries after a failure instead of remembering it", async () => {
    const flight = new SingleFlight<number>();
    let n = 0;
    await expect(flight.run("x", async () => { n++; throw new Error("upstream timed out"); })).rejects.toThrow(/timed out/);
    expect(await flight.run("x", async () => ++n)).toBe(2);
    expect(await Promise.all([flight.run("y", async () => 10), flight.run("z", async () => 20)])).toEqual([10, 20]);
  });
});
