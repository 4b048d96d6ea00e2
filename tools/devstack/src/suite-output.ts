import { prettyFactory } from "pino-pretty";

/**
 * What `npm start` prints. The services log pino JSON lines. On a terminal every event becomes
 * one coloured line (pino-pretty) led by the name of the service that logged it; piped (or in
 * production, where no supervisor runs) the lines stay JSON, one event a line. The supervisor's
 * own messages are events of the same shape (service "suite" or "infra"), so a pipe reads one
 * stream of JSON events.
 */
export interface SuiteOutput {
  /** A line a service printed on its stdout or stderr. */
  service(name: string, line: string, stream: "stdout" | "stderr"): void;
  info(msg: string, source?: string): void;
  warn(msg: string, source?: string): void;
  /** Text shown as it is, not as an event (the bootstrap-key banner). */
  text(lines: readonly string[]): void;
}

const LEVEL = { info: 30, warn: 40 } as const;
const PALETTE = ["36", "35", "33", "34", "32", "96", "95", "93", "94", "92"];

interface Event {
  level: number;
  time: string;
  service: string;
  msg: string;
}

/** The parsed event when `line` is a pino JSON line, else undefined. */
function pinoEvent(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith("{")) return undefined;
  try {
    const parsed: unknown = JSON.parse(line);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return undefined;
    return "level" in parsed ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `pretty`: for a terminal (default: whether stdout is one). `width`: the width the source's
 * name is padded to, so messages line up.
 */
export function createSuiteOutput(opts: { pretty?: boolean; width?: number } = {}): SuiteOutput {
  const pretty = opts.pretty ?? process.stdout.isTTY === true;
  const width = opts.width ?? 8;
  // A closed terminal or pipe (`npm start | head`) must not crash the supervisor mid-shutdown.
  for (const s of [process.stdout, process.stderr]) s.on("error", () => {});

  const colours = new Map<string, string>();
  const colourOf = (name: string) => {
    if (name === "suite" || name === "infra") return "90";
    if (!colours.has(name)) colours.set(name, PALETTE[colours.size % PALETTE.length] ?? "36");
    return colours.get(name) ?? "36";
  };
  const prettify = prettyFactory({
    colorize: true,
    singleLine: true,
    translateTime: "HH:MM:ss.l",
    ignore: "pid,hostname,service",
    messageFormat: (log, messageKey) => {
      const name = String(log.service ?? "");
      const msg = log[messageKey];
      return `\u001b[${colourOf(name)}m${name.padEnd(width)}\u001b[0m ${typeof msg === "string" ? msg : msg === undefined ? "" : JSON.stringify(msg)}`;
    },
  });

  const write = (event: Record<string, unknown>, raw: string | undefined, target: NodeJS.WriteStream) => {
    target.write(pretty ? prettify(event) : `${raw ?? JSON.stringify(event)}\n`);
  };
  const own = (level: keyof typeof LEVEL, msg: string, source = "suite") => {
    const event: Event = { level: LEVEL[level], time: new Date().toISOString(), service: source, msg };
    write({ ...event }, undefined, level === "warn" ? process.stderr : process.stdout);
  };

  return {
    service(name, line, stream) {
      const target = stream === "stderr" ? process.stderr : process.stdout;
      const event = pinoEvent(line);
      if (event) {
        // A line of another service's name (a replica) keeps it; one without gets this one's.
        write({ service: name, ...event }, line, target);
        return;
      }
      if (line.trim() === "") return;
      // Not pino (a crash's stack trace, a warning of node itself): an event of its own.
      const wrapped: Event = { level: stream === "stderr" ? LEVEL.warn : LEVEL.info, time: new Date().toISOString(), service: name, msg: line };
      write({ ...wrapped }, undefined, target);
    },
    info: (msg, source) => own("info", msg, source),
    warn: (msg, source) => own("warn", msg, source),
    text(lines) {
      process.stdout.write(`${lines.join("\n")}\n`);
    },
  };
}
