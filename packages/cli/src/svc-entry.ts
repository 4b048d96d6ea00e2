import { runCli } from "./main.js";

/** The entry point of the bundled file: real streams, Ctrl-C stops a following command cleanly. */
async function main(): Promise<void> {
  const stop = new AbortController();
  let graceful = false;
  process.on("SIGINT", () => {
    if (!graceful || stop.signal.aborted) process.exit(130);
    stop.abort();
  });
  // A reader that closed the pipe early (`svc logs tail | head`) is not an error.
  process.stdout.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(0);
  });
  process.exitCode = await runCli({ argv: process.argv.slice(2), env: process.env, stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, signal: stop.signal, stopsGracefully: () => (graceful = true) });
}

await main();
