// @ts-check
// The reaper process itself (reaper.ts starts it and says what to watch): plain JavaScript that
// node runs as it is. Started for every suite of the end-to-end tests and every `npm start`;
// through tsx (a TypeScript loader and its transform of this file and what it imports) each start
// cost 0.7-1.1 s of CPU, about ten times node's own start. It reads one JSON line per message on
// its standard input ("watch" and "forget", reaper.ts's Message) and, when that pipe closes or a
// SIGTERM comes, stops what is still watched, stage by stage, each by its own signals, and exits.
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";

const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

/** Field 22 of /proc/<pid>/stat (start time in clock ticks since boot); undefined when gone. As reaper.ts's processStart. */
function processStart(/** @type {number} */ pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

/** The process runs (not a zombie: state field Z) and is still the one watched (same start time). */
function alive(/** @type {{ pid: number, start?: string }} */ w) {
  let stat;
  try {
    stat = readFileSync(`/proc/${w.pid}/stat`, "utf8");
  } catch {
    return false;
  }
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return fields[0] !== "Z" && (w.start === undefined || fields[19] === w.start);
}

/**
 * @typedef {{ op: "watch", key: string, pid: number, group?: boolean, stage: number, steps: [NodeJS.Signals, number][], start?: string }} WatchMessage
 */

async function stopOne(/** @type {WatchMessage} */ w, /** @type {(line: string) => void} */ say) {
  for (const [signal, waitMs] of w.steps) {
    if (!alive(w)) return;
    say(`${w.key}: ${signal} to ${w.group ? "process group " : "pid "}${w.pid}`);
    try {
      process.kill(w.group ? -w.pid : w.pid, signal);
    } catch {
      try {
        process.kill(w.pid, signal);
      } catch {
        return; // gone
      }
    }
    const deadline = Date.now() + waitMs;
    while (alive(w) && Date.now() < deadline) await sleep(50);
  }
}

const parentPid = process.argv[2] ?? "?";
const say = (/** @type {string} */ line) => process.stdout.write(`${new Date().toISOString()} reaper of ${parentPid}: ${line}\n`);
// Only the starting process's end (its pipe closing) or an explicit SIGTERM makes it act.
process.on("SIGINT", () => {});
process.on("SIGHUP", () => {});
/** @type {Map<string, WatchMessage>} */
const watched = new Map();
/** @type {Promise<void> | undefined} */
let reaping;
const reap = () =>
  (reaping ??= (async () => {
    const left = [...watched.values()];
    if (left.length > 0) say(`the process is gone; stopping ${left.map((w) => w.key).join(", ")}`);
    for (const stage of [...new Set(left.map((w) => w.stage))].sort((a, b) => a - b)) {
      await Promise.all(left.filter((w) => w.stage === stage).map((w) => stopOne(w, say)));
    }
    process.exit(0);
  })());
process.on("SIGTERM", () => void reap());
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  let m;
  try {
    m = JSON.parse(line);
  } catch {
    return;
  }
  if (m?.op === "watch") watched.set(m.key, m);
  else if (m?.op === "forget") watched.delete(m.key);
});
lines.on("close", () => void reap());
