import { randomInt } from "node:crypto";
import { chmodSync, closeSync, existsSync, linkSync, mkdirSync, openSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { connect, createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pidAlive } from "./process.js";

/**
 * Ports for the processes this project starts (servers, services, Prometheus, nginx), picked so
 * that two runs on one machine never pick the same one.
 *
 * Asking the kernel for a free port (listen on 0, close) is not enough: it hands out ports from
 * the ephemeral range, and between closing the probe and the service binding the port another
 * run's probe can be given the same number. Then one service fails with EADDRINUSE while its
 * callers reach the other run's service on that port (seen in the e2e suite: a gateway asking
 * another test file's auth service about its key, "unknown key"). So a port is taken from below
 * the ephemeral range (which the kernel never hands out by itself) and reserved first: a file
 * per port, created exclusively, holding the reserving process id, in a folder every run on the
 * machine shares. A reservation whose process is gone is taken over; a process's reservations
 * are removed when it exits or when it releases them.
 */
const RESERVATIONS = join(tmpdir(), "svc-port-reservations");
const LOWEST = 20_000;
const mine = new Set<number>();
let exitHookInstalled = false;

function ephemeralFloor(): number {
  try {
    const [low] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
    if (low && Number.isInteger(low)) return low;
  } catch {
    // not Linux: the usual Linux default
  }
  return 32_768;
}

const holderOf = (file: string): number => {
  try {
    return Number(readFileSync(file, "utf8"));
  } catch {
    return NaN; // removed meanwhile
  }
};

/** Creates the reservation file for `port`; false when a living process holds it. */
function reserve(port: number): boolean {
  const file = join(RESERVATIONS, String(port));
  // Written whole under a private name, then linked into place (link fails if the name
  // exists): another run never sees a reservation without its process id. (Created empty and
  // then written, a reader in between took it for a crashed run's and took the port too.)
  const draft = join(RESERVATIONS, `.${port}.${process.pid}`);
  writeFileSync(draft, String(process.pid), { mode: 0o644 });
  try {
    if (link(draft, file, port)) return true;
    const holder = holderOf(file);
    if (holder === process.pid || (Number.isInteger(holder) && holder > 0 && pidAlive(holder))) return false;
    // Left by a process that is gone. Taken over by one run at a time: two that both saw the
    // dead holder and removed the file in turn could each remove the other's new reservation.
    const takeover = `${file}.takeover`;
    try {
      closeSync(openSync(takeover, "wx", 0o644));
    } catch {
      return false; // another run is taking it over (or one died doing so): pick another port
    }
    try {
      if (holderOf(file) === holder) rmSync(file, { force: true });
      return link(draft, file, port);
    } finally {
      unlinkSync(takeover);
    }
  } finally {
    unlinkSync(draft);
  }
}

/** Links the draft as the reservation of `port`; false when the name exists. */
function link(draft: string, file: string, port: number): boolean {
  try {
    linkSync(draft, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  }
  mine.add(port);
  return true;
}

/** True when nothing listens on host:port (we can bind it). */
export function portIsFree(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once("error", () => resolve(false));
    srv.listen({ port, host: host.replace(/^\[|\]$/g, ""), exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/** The shared folder exists and this process gives its reservations back when it exits. */
function prepareReservations(): void {
  if (!existsSync(RESERVATIONS)) {
    mkdirSync(RESERVATIONS, { recursive: true });
    // Shared by every user's runs, like /tmp itself (the umask would narrow mkdir's mode).
    try {
      chmodSync(RESERVATIONS, 0o1777);
    } catch {
      // made by another user's run a moment ago: it set the mode
    }
  }
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once("exit", () => {
      for (const port of mine) releasePort(port);
    });
  }
}

/** A port on 127.0.0.1 that nothing listens on and no other run of this project will pick. */
export async function reservePort(): Promise<number> {
  prepareReservations();
  const ceiling = ephemeralFloor();
  if (ceiling - LOWEST < 1000) throw new Error(`too few ports below the ephemeral range (${ceiling}) to pick from`);
  for (let attempt = 0; attempt < 500; attempt++) {
    const port = randomInt(LOWEST, ceiling);
    if (!reserve(port)) continue;
    if (await portIsFree(port)) return port;
    // Something outside this project listens there: leave it alone.
    releasePort(port);
  }
  throw new Error("could not find a free port to reserve");
}

/**
 * Reserves this very port (a usual or fixed one) so that no other run of this project picks it
 * while our server on it runs or restarts; false when a living process of another run holds it.
 * Already ours: true.
 */
export function reserveThisPort(port: number): boolean {
  if (mine.has(port)) return true;
  prepareReservations();
  return reserve(port);
}

/** Gives a reserved port back (its process has stopped for good). */
export function releasePort(port: number): void {
  if (!mine.delete(port)) return;
  try {
    if (Number(readFileSync(join(RESERVATIONS, String(port)), "utf8")) === process.pid) unlinkSync(join(RESERVATIONS, String(port)));
  } catch {
    // already gone
  }
}

/** Waits until 127.0.0.1:port answers: `probe` gets the connected socket and decides. */
export function probeTcp(port: number, probe: (sock: Socket, done: (ok: boolean) => void) => void, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolvePromise) => {
    let settled = false;
    const sock = connect({ host: "127.0.0.1", port });
    const finish = (ok: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      resolvePromise(ok);
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    sock.on("error", () => finish(false));
    sock.on("close", () => finish(false));
    sock.on("connect", () => probe(sock, finish));
  });
}
