import { Writable } from "node:stream";
import pino, { type Logger } from "pino";
import type { LogEntry } from "@svc/contracts";

/**
 * pino JSON lines with secrets removed at the logger: known secret-bearing fields are
 * censored by path, and anything that looks like a key (`svck_…`) is masked in the final
 * line, wherever it appears, before it reaches stdout or the in-memory buffer.
 */
export const REDACT_PATHS = [
  "req.headers.authorization",
  "req.headers.cookie",
  'req.headers["service-repository-key"]',
  'req.headers["set-cookie"]',
  "headers.authorization",
  "headers.cookie",
  'headers["service-repository-key"]',
  "res.headers['set-cookie']",
  "key",
  "*.key",
  "secret",
  "*.secret",
  "clientSecret",
  "*.clientSecret",
  "password",
  "*.password",
  "bootstrapKey",
  "*.bootstrapKey",
  "internalSecret",
  "*.internalSecret",
  "databaseUrl",
  "*.databaseUrl",
];

const KEY_IN_TEXT = /svck_[a-z0-9-]{1,63}\.[A-Za-z0-9_-]{4,}/g;
const URL_PASSWORD = /(\b[a-z][a-z0-9+.-]*:\/\/[^:/@\s"]*:)[^@\s"]+@/gi;

export function scrubSecrets(line: string): string {
  let out = line;
  if (out.includes("svck_")) out = out.replace(KEY_IN_TEXT, (m) => `${m.slice(0, m.indexOf(".") + 1)}[redacted]`);
  if (out.includes("@")) out = out.replace(URL_PASSWORD, "$1[redacted]@");
  return out;
}

export type { LogEntry };

const LEVELS: Record<number, string> = { 10: "TRACE", 20: "DEBUG", 30: "INFO", 40: "WARN", 50: "ERROR", 60: "FATAL" };

/** The field that marks a gateway access line (one per request): `category: "access"`. */
export const ACCESS_CATEGORY = "access";
/** pino writes level, time and the base bindings first, then a child's: the marker sits near the start of an access line. */
const ACCESS_MARK = `"category":"${ACCESS_CATEGORY}"`;
const ACCESS_MARK_WITHIN = 160;

/**
 * The last `capacity` entries, with increasing sequence numbers, for `/api/logs`. Access lines
 * (one per request at the gateway) keep a ring of their own, so a busy hour of traffic never
 * pushes start-up warnings and administrative changes out of memory. Every line is kept as the
 * text pino wrote and parsed only when asked for, so a line logged costs no parse here (a
 * line that is not JSON is left out then).
 */
export class LogRing {
  private readonly others: Line[] = [];
  private readonly access: Line[] = [];
  private next = 1;
  constructor(
    private readonly capacity = 1000,
    private readonly accessCapacity = 1000,
  ) {}

  push(line: string): void {
    const mark = line.indexOf(ACCESS_MARK);
    const isAccess = mark >= 0 && mark < ACCESS_MARK_WITHIN;
    const ring = isAccess ? this.access : this.others;
    ring.push({ seq: this.next++, line });
    if (ring.length > (isAccess ? this.accessCapacity : this.capacity)) ring.shift();
  }

  /** Entries after `after` (a sequence number), oldest first; `category` picks access lines only, or everything else. */
  list(after = 0, category?: "access" | "other"): LogEntry[] {
    const others = category === "access" ? [] : parsed(this.others, after);
    const access = category === "other" ? [] : parsed(this.access, after);
    if (!others.length) return access;
    if (!access.length) return others;
    return [...others, ...access].sort((x, y) => x.seq - y.seq);
  }
}

type Line = { seq: number; line: string };

function parsed(lines: Line[], after: number): LogEntry[] {
  const out: LogEntry[] = [];
  for (const l of lines) {
    if (l.seq <= after) continue;
    const e = toEntry(l.line, l.seq);
    if (e) out.push(e);
  }
  return out;
}

function toEntry(line: string, seq: number): LogEntry | undefined {
  let obj: Record<string, unknown>;
  try {
    obj = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const { level, time, msg, service, pid: _pid, hostname: _h, ...rest } = obj;
  return {
    ...rest,
    seq,
    time: typeof time === "number" ? new Date(time).toISOString() : String(time ?? new Date().toISOString()),
    level: LEVELS[level as number] ?? String(level),
    service: String(service ?? ""),
    msg: String(msg ?? ""),
  };
}

export interface ServiceLogger {
  log: Logger;
  ring: LogRing;
}

/** Every logger's pending lines, written when the process exits (one listener for them all). */
const exitFlushes = new Set<() => void>();
function flushOnExit(flush: () => void): void {
  if (exitFlushes.size === 0) process.once("exit", () => exitFlushes.forEach((f) => f()));
  exitFlushes.add(flush);
}

export function createLogger(service: string, level: string, destination: NodeJS.WritableStream = process.stdout): ServiceLogger {
  const ring = new LogRing(1000);
  // Lines go out together once per turn of the event loop: with an access line per request, one
  // write per line cost the gateway about a tenth of its CPU (a write call and its encoding each).
  // Flushed on exit too, so a line logged just before process.exit() is not lost.
  let pending: string[] = [];
  const flush = () => {
    if (pending.length === 0) return;
    const text = pending.length === 1 ? pending[0]! : pending.join("");
    pending = [];
    destination.write(text);
  };
  flushOnExit(flush);
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      const text = chunk.toString();
      if (pending.length === 0) setImmediate(flush);
      pending.push(text);
      for (const line of text.split("\n")) if (line) ring.push(line);
      cb();
    },
  });
  const log = pino(
    {
      level,
      base: { service },
      redact: { paths: REDACT_PATHS, censor: "[redacted]" },
      hooks: { streamWrite: scrubSecrets },
      serializers: { err: pino.stdSerializers.err },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    sink,
  );
  return { log, ring };
}

type LogMethod = (...args: unknown[]) => void;
type Made = Record<"fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent", LogMethod> & { level: string; child: (bindings: object, options?: object) => unknown };

/**
 * A request's logger (fastify's `childLoggerFactory`), made on first use: most requests write
 * no line of their own, and making a pino child for each (its bindings serialised, its level
 * set) cost the gateway about a twentieth of its CPU per request. Lines carry the request id
 * as a made child's would.
 */
export class LazyChildLogger {
  #made: Made | undefined;
  constructor(
    private readonly parent: { child: (bindings: object, options?: object) => unknown },
    private readonly bindings: object,
    private readonly options: object,
  ) {}
  private made(): Made {
    return (this.#made ??= this.parent.child(this.bindings, this.options) as Made);
  }
  get level(): string {
    return this.made().level;
  }
  set level(level: string) {
    this.made().level = level;
  }
  fatal(...args: unknown[]): void {
    this.made().fatal(...args);
  }
  error(...args: unknown[]): void {
    this.made().error(...args);
  }
  warn(...args: unknown[]): void {
    this.made().warn(...args);
  }
  info(...args: unknown[]): void {
    this.made().info(...args);
  }
  debug(...args: unknown[]): void {
    this.made().debug(...args);
  }
  trace(...args: unknown[]): void {
    this.made().trace(...args);
  }
  silent(...args: unknown[]): void {
    this.made().silent(...args);
  }
  child(bindings: object, options?: object): unknown {
    return this.made().child(bindings, options);
  }
}
