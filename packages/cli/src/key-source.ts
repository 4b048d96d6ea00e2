import { readFile } from "node:fs/promises";
import { localError, usageError } from "./cli-errors.js";

export interface KeySources {
  keyFile?: string;
  key?: string;
  env: NodeJS.ProcessEnv;
  stdin: NodeJS.ReadableStream;
}

/**
 * The key, from the first source given: `--key-file <path>` (`-` reads standard input),
 * `--key` (visible to `ps`, so only for throw-away keys), `SVC_KEY_FILE`, `SVC_KEY`.
 * A key is never required on the command line.
 */
export async function resolveKey(s: KeySources): Promise<string | undefined> {
  if (s.keyFile !== undefined) return fromFile(s.keyFile, "--key-file", s.stdin);
  if (s.key !== undefined) return checked(s.key, "--key");
  if (s.env.SVC_KEY_FILE) return fromFile(s.env.SVC_KEY_FILE, "SVC_KEY_FILE", s.stdin);
  if (s.env.SVC_KEY) return checked(s.env.SVC_KEY, "SVC_KEY");
  return undefined;
}

async function fromFile(path: string, source: string, stdin: NodeJS.ReadableStream): Promise<string> {
  let text: string;
  try {
    text = path === "-" ? await readAll(stdin) : await readFile(path, "utf8");
  } catch (err) {
    throw localError(`Cannot read the key from ${path === "-" ? "standard input" : path} (${source}): ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  // The first non-empty line: a file written by `echo` or an editor ends with a newline.
  return checked(text.split(/\r?\n/).find((l) => l.trim())?.trim() ?? "", source);
}

function checked(key: string, source: string): string {
  const k = key.trim();
  if (!k) throw usageError(`The key from ${source} is empty.`);
  if (/[\s\u0000-\u001f]/.test(k)) throw usageError(`The key from ${source} holds spaces or control characters: not a key.`);
  return k;
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.from(c as Buffer));
  return Buffer.concat(chunks).toString("utf8");
}
