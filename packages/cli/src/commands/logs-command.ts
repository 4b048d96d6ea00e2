import type { NodeLogEntry as LogEntry } from "@svc/contracts";
import { str, type Command, type CommandContext } from "../command-types.js";
import { CliError, EXIT, usageError } from "../cli-errors.js";


const SHOWN_APART = new Set(["seq", "node", "service", "time", "level", "msg"]);

/** `time LEVEL service msg field=value ...`, one line per entry. */
export function logLine(e: LogEntry): string {
  const fields = Object.entries(e)
    .filter(([k]) => !SHOWN_APART.has(k))
    .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(" ");
  return `${e.time} ${e.level.padEnd(5)} ${e.service.padEnd(9)} ${e.msg}${fields ? ` ${fields}` : ""}`.replace(/[\r\n]+/g, " ");
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
  });

/** The most the server returns per call. */
const SERVER_MAX = 1000;
const RETRY_MS = 2000;

async function tail(ctx: CommandContext): Promise<void> {
  const api = await ctx.api();
  const limitText = str(ctx.values.limit) ?? "50";
  if (!/^\d+$/.test(limitText) || Number(limitText) < 1 || Number(limitText) > SERVER_MAX) throw usageError("--limit is a whole number from 1 to 1000.");
  const limit = Number(limitText);
  const intervalText = str(ctx.values.interval) ?? "1";
  const intervalMs = Number(intervalText) * 1000;
  if (!Number.isFinite(intervalMs) || intervalMs < 100) throw usageError("--interval is a number of seconds, at least 0.1.");
  // Every filter is the server's: it reads each service's own recent entries, so a quiet
  // service's entries are found however many newer lines the others wrote.
  const query = { level: str(ctx.values.level), q: str(ctx.values.text), category: str(ctx.values.category), service: str(ctx.values.service) };
  const print = (entries: LogEntry[]) => {
    for (const e of entries) ctx.out.out(ctx.out.json ? JSON.stringify(e) : logLine(e));
  };

  const first = await api.json<{ entries: LogEntry[]; next: string }>("GET", "/api/logs", { query: { ...query, limit } });
  print(first.entries);
  if (ctx.values.follow !== true) return;

  const signal = ctx.untilInterrupted();
  ctx.out.note("Following new entries (Ctrl-C stops).");
  let after = first.next;
  while (!signal.aborted) {
    let page: { entries: LogEntry[]; next: string };
    try {
      page = await api.json<{ entries: LogEntry[]; next: string }>("GET", "/api/logs", { query: { ...query, limit: SERVER_MAX, after } });
    } catch (err) {
      // A restarting server or a moment without network does not end a follow; a refusal does.
      if (!(err instanceof CliError) || (err.exitCode !== EXIT.unexpected && err.exitCode !== EXIT.unreachable)) throw err;
      ctx.out.note(`${err.message} (still following; trying again)`);
      await sleep(Math.max(intervalMs, RETRY_MS), signal);
      continue;
    }
    print(page.entries);
    after = page.next;
    // A full page means more are waiting: ask again at once.
    if (page.entries.length < SERVER_MAX) await sleep(intervalMs, signal);
  }
}

export const logsCommand: Command = {
  name: "logs",
  summary: "the deployment's recent log entries, filtered, optionally following new ones",
  subcommands: [
    {
      name: "tail",
      maxArgs: 0,
      summary: "the newest entries of every service (one line each; with --json one JSON object per line)",
      options: {
        level: { type: "string", value: "level", description: "that level and above: TRACE, DEBUG, INFO, WARN, ERROR, FATAL" },
        text: { type: "string", value: "text", description: "only entries containing this text (case-insensitive, message or any field)" },
        service: { type: "string", value: "name[,name]", description: "only these services' entries (gateway, auth, artifacts, admin, walker, notifier, console; several separated by commas)" },
        category: { type: "string", value: "kind", description: "access: the gateway's line per request only; other: everything else" },
        limit: { type: "string", value: "n", description: "how many of the newest entries to show first (1-1000, default 50)" },
        follow: { type: "boolean", short: "f", description: "keep printing new entries as they come, until Ctrl-C" },
        interval: { type: "string", value: "seconds", description: "how often --follow asks for new entries (default 1)" },
      },
      examples: ["svc logs tail --level WARN", "svc logs tail --service gateway --text /api/credentials --follow"],
      async run(ctx) {
        await tail(ctx);
      },
    },
  ],
};
