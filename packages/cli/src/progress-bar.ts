import { bytes } from "./table-output.js";

export interface Progress {
  add(n: number): void;
  done(): void;
}

const WIDTH = 24;
const EVERY_MS = 100;

/**
 * A one-line progress bar on a terminal stream, redrawn at most ten times a second:
 * `label [#####.......] 42% 4.2 MiB / 10.0 MiB 3.1 MiB/s`. Without a known total it shows the
 * bytes and the rate. Disabled, it draws nothing (not a terminal, or --no-progress).
 */
export function progressBar(o: { label: string; total: number | undefined; stream: NodeJS.WritableStream; enabled: boolean }): Progress {
  if (!o.enabled) return { add() {}, done() {} };
  const started = Date.now();
  let sent = 0;
  let last = 0;
  const draw = () => {
    const seconds = Math.max((Date.now() - started) / 1000, 0.001);
    const rate = `${bytes(Math.round(sent / seconds))}/s`;
    let line: string;
    if (o.total && o.total > 0) {
      const frac = Math.min(sent / o.total, 1);
      const filled = Math.round(frac * WIDTH);
      line = `${o.label} [${"#".repeat(filled)}${".".repeat(WIDTH - filled)}] ${Math.floor(frac * 100)}% ${bytes(sent)} / ${bytes(o.total)} ${rate}`;
    } else line = `${o.label} ${bytes(sent)} ${rate}`;
    o.stream.write(`\r${line}\u001b[K`);
  };
  return {
    add(n) {
      sent += n;
      const now = Date.now();
      if (now - last >= EVERY_MS) {
        last = now;
        draw();
      }
    },
    done() {
      draw();
      o.stream.write("\n");
    },
  };
}
