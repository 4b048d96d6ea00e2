import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { releasePort, reservePort } from "./ports.js";

const RESERVATIONS = join(tmpdir(), "svc-port-reservations");
const here = import.meta.dirname;

/**
 * Another process reserving `n` ports at the same time as this one. It holds them until
 * `exit()`: a port given back may rightly be handed out again, so only ports held at the same
 * time must all differ.
 */
function reserveElsewhere(n: number): Promise<{ ports: number[]; pid: number; exit: () => Promise<void> }> {
  const code = `import { reservePort } from ${JSON.stringify(join(here, "ports.ts"))};
const ports = [];
for (let i = 0; i < ${n}; i++) ports.push(await reservePort());
console.log(JSON.stringify({ ports, pid: process.pid }));
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], { stdio: ["pipe", "pipe", "inherit"] });
    const exited = new Promise<number | null>((r) => child.on("exit", (status) => r(status)));
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      if (!out.includes("\n")) return;
      const held = JSON.parse(out) as { ports: number[]; pid: number };
      resolve({
        ...held,
        exit: async () => {
          child.stdin.end();
          const status = await exited;
          if (status !== 0) throw new Error(`exited with ${status}`);
        },
      });
    });
    child.on("error", reject);
    void exited.then((status) => reject(new Error(`exited with ${status} before reserving`)));
  });
}

describe("reservePort", () => {
  it("never gives two processes the same port, and keeps below the kernel's ephemeral range", async () => {
    const [floor] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
    const others = Promise.all([reserveElsewhere(40), reserveElsewhere(40)]);
    const ours: number[] = [];
    for (let i = 0; i < 40; i++) ours.push(await reservePort());
    const [ea, eb] = await others;
    const [a, b] = [ea!.ports, eb!.ports];
    const all = [...ours, ...a, ...b];
    // All 120 held at once.
    expect(new Set(all).size).toBe(120);
    await Promise.all([ea!.exit(), eb!.exit()]);
    for (const port of all) {
      expect(port).toBeGreaterThanOrEqual(20_000);
      expect(port).toBeLessThan(floor!);
    }
    // Ours are held under our process id; the other processes' went away when they exited.
    for (const port of ours) expect(readFileSync(join(RESERVATIONS, String(port)), "utf8")).toBe(String(process.pid));
    // Another test file running beside this one may have reserved a port since they let it go:
    // what must be gone is their hold on it.
    const holder = (port: number) => (existsSync(join(RESERVATIONS, String(port))) ? readFileSync(join(RESERVATIONS, String(port)), "utf8") : undefined);
    for (const port of a) expect(holder(port), String(port)).not.toBe(String(ea!.pid));
    for (const port of b) expect(holder(port), String(port)).not.toBe(String(eb!.pid));
    for (const port of ours) releasePort(port);
    for (const port of ours) expect(existsSync(join(RESERVATIONS, String(port)))).toBe(false);
  });
});
