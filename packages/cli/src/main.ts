import { parseArgs, type ParseArgsConfig } from "node:util";
import { apiClient, withoutCredentials, type ApiClient } from "./api-client.js";
import { CliError, EXIT, usageError } from "./cli-errors.js";
import { str, type Command, type CommandContext, type OptionSpec, type OptionValues, type Subcommand } from "./command-types.js";
import { auditCommand } from "./commands/audit-command.js";
import { credentialsCommand } from "./commands/credentials-command.js";
import { capabilitiesCommand, cachesCommand, postureCommand, whoamiCommand } from "./commands/info-commands.js";
import { logsCommand } from "./commands/logs-command.js";
import { loginCommand } from "./commands/login-command.js";
import { groupsCommand, peopleCommand } from "./commands/people-groups-command.js";
import { repositoriesCommand } from "./commands/repositories-command.js";
import { fetchCommand, uploadCommand } from "./commands/transfer-command.js";
import { walksCommand } from "./commands/walks-command.js";
import { GLOBAL_OPTIONS, commandHelp, subcommandHelp, topHelp, usageOf } from "./help-text.js";
import { resolveKey } from "./key-source.js";
import { readLogin } from "./login-file.js";

export const COMMANDS: readonly Command[] = [
  loginCommand,
  credentialsCommand,
  peopleCommand,
  groupsCommand,
  walksCommand,
  repositoriesCommand,
  logsCommand,
  auditCommand,
  postureCommand,
  capabilitiesCommand,
  whoamiCommand,
  cachesCommand,
  uploadCommand,
  fetchCommand,
];

export const DEFAULT_URL = "http://127.0.0.1:8080";

export interface Io {
  argv: string[];
  env: NodeJS.ProcessEnv;
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  /** Aborted on Ctrl-C once a command asked for it (untilInterrupted). */
  signal: AbortSignal;
  /** Called when a command will stop cleanly on Ctrl-C. */
  stopsGracefully(): void;
}

type ParseOptions = NonNullable<ParseArgsConfig["options"]>;
const toParseOptions = (specs: Record<string, OptionSpec>): ParseOptions =>
  Object.fromEntries(Object.entries(specs).map(([n, o]) => [n, { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) }]));

/** Every option any command knows, so the command words can be found before knowing the command. */
const ALL_OPTIONS = toParseOptions(Object.assign({}, ...COMMANDS.flatMap((c) => c.subcommands.map((s) => s.options ?? {})), GLOBAL_OPTIONS));

function findSubcommand(c: Command, words: string[]): { sub: Subcommand; used: number } | undefined {
  const direct = c.subcommands.find((s) => s.name === "");
  if (direct) return { sub: direct, used: 1 };
  const two = c.subcommands.find((s) => s.name === `${words[1]} ${words[2]}`);
  if (two) return { sub: two, used: 3 };
  const one = c.subcommands.find((s) => s.name === words[1]);
  return one ? { sub: one, used: 2 } : undefined;
}

/** Runs one command line; resolves to the exit code. Never throws. */
export async function runCli(io: Io): Promise<number> {
  const say = (text: string) => io.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
  try {
    const scan = parseArgs({ args: io.argv, options: ALL_OPTIONS, strict: false, allowPositionals: true });
    const words = scan.positionals;
    const wantsHelp = scan.values.help === true || words[0] === "help";
    if (words[0] === "help") words.shift();
    if (words.length === 0) {
      say(topHelp(COMMANDS));
      return wantsHelp ? EXIT.ok : EXIT.usage;
    }
    const command = COMMANDS.find((c) => c.name === words[0]);
    if (!command) throw usageError(`Unknown command "${words[0]}". Commands: ${COMMANDS.map((c) => c.name).join(", ")} (svc --help lists them all).`);
    const found = findSubcommand(command, words);
    if (!found) {
      if (wantsHelp || words.length === 1) {
        say(commandHelp(command));
        return wantsHelp ? EXIT.ok : EXIT.usage;
      }
      throw usageError(`Unknown subcommand "${words.slice(1).join(" ")}" of ${command.name}: ${command.subcommands.map((s) => s.name).join(", ")}.`);
    }
    const { sub, used } = found;
    if (wantsHelp) {
      say(subcommandHelp(command, sub));
      return EXIT.ok;
    }

    let parsed: { values: OptionValues; positionals: string[] };
    try {
      parsed = parseArgs({ args: io.argv, options: toParseOptions({ ...GLOBAL_OPTIONS, ...sub.options }), strict: true, allowPositionals: true }) as typeof parsed;
    } catch (err) {
      throw usageError(`${(err as Error).message.split("\n")[0]} (svc ${command.name}${sub.name ? ` ${sub.name}` : ""} --help lists its options)`);
    }
    const args = parsed.positionals.slice(used);
    if (args.length < (sub.minArgs ?? 0) || args.length > (sub.maxArgs ?? Infinity)) throw usageError(`Usage: ${usageOf(command, sub)} (svc ${command.name} --help for more)`);

    const values = parsed.values;
    let client: ApiClient | undefined;
    const checkedUrl = (baseUrl: string) => {
      if (!/^https?:\/\/[^/]/.test(baseUrl) || !URL.canParse(baseUrl)) throw usageError(`The server address "${withoutCredentials(baseUrl)}" is not an http(s) URL (--url or SVC_URL).`);
      return baseUrl;
    };
    const ctx: CommandContext = {
      async api() {
        if (client) return client;
        const given = await resolveKey({ keyFile: str(values["key-file"]), key: str(values.key), env: io.env, stdin: io.stdin });
        // svc login's key, with the server it came from, when no key is given otherwise.
        const stored = given === undefined ? await readLogin(io.env) : undefined;
        const baseUrl = checkedUrl(str(values.url) ?? io.env.SVC_URL ?? stored?.url ?? DEFAULT_URL);
        client = apiClient({ baseUrl, key: given ?? stored?.key });
        return client;
      },
      serverUrl: () => checkedUrl(str(values.url) ?? io.env.SVC_URL ?? DEFAULT_URL),
      env: io.env,
      out: {
        json: values.json === true,
        out: say,
        note: (text) => io.stderr.write(`${text}\n`),
      },
      args,
      values,
      progress: values["no-progress"] === true ? false : values.progress === true || io.stderr.isTTY === true,
      stdout: io.stdout,
      stderr: io.stderr,
      untilInterrupted() {
        io.stopsGracefully();
        return io.signal;
      },
    };
    return (await sub.run(ctx)) ?? EXIT.ok;
  } catch (err) {
    if (err instanceof CliError) {
      io.stderr.write(`svc: ${err.message}\n`);
      return err.exitCode;
    }
    // A fault of the client itself: one line, no stack (SVC_DEBUG=1 shows it).
    io.stderr.write(`svc: the client failed: ${(err as Error).message}\n`);
    if (io.env.SVC_DEBUG === "1") io.stderr.write(`${(err as Error).stack}\n`);
    return EXIT.local;
  }
}
