/**
 * Exit codes, one per class of outcome, so a script can tell "you asked wrongly" from "the server
 * said no" from "the server broke" from "nothing answered" without reading the message.
 */
export const EXIT = {
  ok: 0,
  /** A local problem: a file that cannot be read or written. */
  local: 1,
  /** The command line itself is wrong (unknown command or option, missing argument, no key). */
  usage: 2,
  /** The server refused on purpose (4xx): the message is its reason. */
  refused: 3,
  /** The server failed unexpectedly (5xx): the message ends with the reference to quote. */
  unexpected: 4,
  /** The server could not be reached at all. */
  unreachable: 5,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** A failure the client reports as one sentence and an exit code, never with a stack. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode,
  ) {
    super(message);
  }
}

export const usageError = (message: string) => new CliError(message, EXIT.usage);
export const localError = (message: string) => new CliError(message, EXIT.local);
