import type { ApiClient } from "./api-client.js";
import type { Output } from "./table-output.js";

export interface OptionSpec {
  type: "string" | "boolean";
  short?: string;
  multiple?: boolean;
  /** Shown in help as `--name <value>`. */
  value?: string;
  description: string;
}

export type OptionValues = Record<string, string | boolean | string[] | undefined>;

export interface CommandContext {
  /** Built on first use, so `svc <command> --help` and usage errors need no key or server. */
  api(): Promise<ApiClient>;
  /** The server's address: --url, SVC_URL, svc login's, or the default. Checked to be an http(s) URL. */
  serverUrl(): string;
  /** The environment the command runs in (where svc login keeps its key). */
  env: NodeJS.ProcessEnv;
  out: Output;
  /** Arguments after the command words. */
  args: string[];
  values: OptionValues;
  /** Whether progress bars are drawn (standard error is a terminal, or --progress). */
  progress: boolean;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  /**
   * For a command that runs until stopped (logs --follow, walks run --wait): from this call on,
   * Ctrl-C aborts the signal answered, so the command ends cleanly (exit 0), instead of ending
   * the process at once (exit 130) as it does for every other command.
   */
  untilInterrupted(): AbortSignal;
}

export interface Subcommand {
  /** One word, or two for a nested one (`members add`). */
  name: string;
  /** Positional arguments as shown in help, e.g. `<id> <scope> <token>...`. */
  args?: string;
  minArgs?: number;
  maxArgs?: number;
  summary: string;
  /** More to say, shown by `svc <command> --help` only. */
  detail?: string;
  options?: Record<string, OptionSpec>;
  /** One or more example command lines. */
  examples: string[];
  /** Resolves to an exit code, 0 when nothing is said. */
  run(ctx: CommandContext): Promise<number | void>;
}

export interface Command {
  name: string;
  summary: string;
  subcommands: Subcommand[];
}

export const str = (v: OptionValues[string]): string | undefined => (typeof v === "string" ? v : undefined);
export const list = (v: OptionValues[string]): string[] => (Array.isArray(v) ? v : typeof v === "string" ? [v] : []);
