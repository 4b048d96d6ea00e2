import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { localError } from "./cli-errors.js";

/**
 * Where `svc login` keeps the server address and the personal key it received, for every later
 * command that is given neither (docs/administration/cli.md, "svc login"):
 * `$XDG_CONFIG_HOME/svc/login.json`, by default `~/.config/svc/login.json`, mode 0600 in a
 * folder of mode 0700. `--key-file`, `--key`, `SVC_KEY_FILE` and `SVC_KEY` go first, and
 * `--url` and `SVC_URL` before its address.
 */
export interface StoredLogin {
  url: string;
  key: string;
  /** The person the key belongs to, and when it expires: for `svc whoami`'s reader. */
  person?: string;
  expires?: string | null;
}

export function loginFilePath(env: NodeJS.ProcessEnv): string | undefined {
  const base = env.XDG_CONFIG_HOME || (env.HOME ? join(env.HOME, ".config") : undefined);
  return base ? join(base, "svc", "login.json") : undefined;
}

/** The stored login, or undefined when there is none; a file that cannot be read as one is an error, never ignored. */
export async function readLogin(env: NodeJS.ProcessEnv): Promise<StoredLogin | undefined> {
  const path = loginFilePath(env);
  if (!path) return undefined;
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw localError(`Cannot read ${path} (svc login's key): ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    const parsed = JSON.parse(text) as Partial<StoredLogin>;
    if (typeof parsed.url === "string" && typeof parsed.key === "string" && parsed.key !== "") return parsed as StoredLogin;
  } catch {
    // reported below
  }
  throw localError(`${path} is not a login svc login wrote: remove it, or run svc login again`);
}

export async function writeLogin(env: NodeJS.ProcessEnv, login: StoredLogin): Promise<string> {
  const path = loginFilePath(env);
  if (!path) throw localError("Neither HOME nor XDG_CONFIG_HOME is set: svc login has nowhere to keep the key");
  try {
    await mkdir(join(path, ".."), { recursive: true, mode: 0o700 });
    await writeFile(path, `${JSON.stringify(login, null, 2)}\n`, { mode: 0o600 });
    // A file that was there already keeps its mode through writeFile: make it the owner's alone.
    await chmod(path, 0o600);
  } catch (err) {
    throw localError(`Cannot write ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return path;
}
