import type { Command, OptionSpec, Subcommand } from "./command-types.js";

export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  url: { type: "string", value: "url", description: "the gateway's base URL (default: SVC_URL, else http://127.0.0.1:8080)" },
  "key-file": { type: "string", value: "path", description: "read the key from this file's first line; - reads it from standard input (default: SVC_KEY_FILE, else SVC_KEY)" },
  key: {
    type: "string",
    value: "key",
    description: "the key itself. Avoid it: a command line is visible to every user of the machine (ps, /proc) and kept in shell history; use SVC_KEY or --key-file",
  },
  json: { type: "boolean", description: "print JSON instead of a table" },
  progress: { type: "boolean", description: "draw progress bars even when standard error is not a terminal" },
  "no-progress": { type: "boolean", description: "never draw progress bars" },
  help: { type: "boolean", short: "h", description: "show help (svc <command> --help for one command)" },
};

const optionLine = (name: string, o: OptionSpec) => {
  const flag = `${o.short ? `-${o.short}, ` : ""}--${name}${o.value ? ` <${o.value}>` : ""}${o.multiple ? " (repeatable)" : ""}`;
  return `    ${flag.padEnd(34)} ${o.description}`;
};

export const usageOf = (c: Command, s: Subcommand) => ["svc", c.name, s.name, s.args ?? ""].filter(Boolean).join(" ");

export function subcommandHelp(c: Command, s: Subcommand): string {
  const lines = [`  ${usageOf(c, s)}`, `      ${s.summary}`];
  if (s.detail) lines.push(`      ${s.detail}`);
  for (const [name, o] of Object.entries(s.options ?? {})) lines.push(optionLine(name, o));
  for (const e of s.examples) lines.push(`      e.g. ${e}`);
  return lines.join("\n");
}

export function commandHelp(c: Command): string {
  return [`svc ${c.name}: ${c.summary}`, "", ...c.subcommands.map((s) => subcommandHelp(c, s) + "\n"), globalHelp()].join("\n");
}

function globalHelp(): string {
  return [
    "Options of every command:",
    ...Object.entries(GLOBAL_OPTIONS).map(([n, o]) => optionLine(n, o)),
    "",
    "Environment: SVC_URL (server), SVC_KEY (the key), SVC_KEY_FILE (a file holding the key).",
    "Exit codes: 0 done; 1 a local file problem; 2 wrong usage; 3 refused by the server (its reason is printed);",
    "            4 the server failed unexpectedly (the message ends with `Reference: <reference>` to quote); 5 server not reachable.",
  ].join("\n");
}

export function topHelp(commands: readonly Command[]): string {
  const rows = commands.flatMap((c) => c.subcommands.map((s) => [usageOf(c, s), s.name ? s.summary : c.summary] as const));
  const width = Math.min(Math.max(...rows.map(([u]) => u.length)), 52);
  return [
    "svc: the command-line client of the artifact repository server",
    "",
    "Usage: svc <command> [<subcommand>] [arguments] [options]",
    "",
    "Commands:",
    ...rows.map(([u, s]) => (u.length > width ? `  ${u}\n  ${"".padEnd(width)}  ${s}` : `  ${u.padEnd(width)}  ${s}`)),
    "",
    "svc <command> --help shows a command's options and examples.",
    "",
    globalHelp(),
  ].join("\n");
}
