import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { Unzip, UnzipInflate } from "fflate";
import { parseOsvRecord, type Advisory } from "./osv-records.js";

/** What a source held: the records the gate keeps, and how many files were no OSV record it could use. */
export interface SourceRead {
  advisories: Advisory[];
  skipped: number;
}

const ZIP_MAGIC = [0x50, 0x4b, 0x03, 0x04];
const isZip = (b: Uint8Array) => ZIP_MAGIC.every((x, i) => b[i] === x);
/** The longest a download of an https source may take. */
const FETCH_TIMEOUT_MS = 10 * 60_000;

/** A file's records: one OSV record, or an array of them. */
function recordsOf(text: string, into: SourceRead): void {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    into.skipped++;
    return;
  }
  for (const v of Array.isArray(value) ? value : [value]) {
    const a = parseOsvRecord(v);
    if (a) into.advisories.push(a);
    else into.skipped++;
  }
}

/**
 * The `.json` files of a zip (osv.dev's `all.zip`), read as a stream: one file's bytes in memory
 * at a time, never the whole archive expanded. A zip cut short (a file begun and never ended)
 * is an error, so a truncated download never replaces good data.
 */
export function readZip(bytes: Uint8Array, into: SourceRead = { advisories: [], skipped: 0 }): SourceRead {
  if (!isZip(bytes)) throw new Error("not a zip archive");
  const decoder = new TextDecoder();
  let open = 0;
  let error: Error | undefined;
  const unzip = new Unzip((file) => {
    if (!file.name.endsWith(".json")) return;
    open++;
    const parts: Uint8Array[] = [];
    file.ondata = (err, chunk, final) => {
      if (err) {
        error ??= err;
        return;
      }
      parts.push(chunk);
      if (!final) return;
      open--;
      recordsOf(decoder.decode(Buffer.concat(parts)), into);
    };
    file.start();
  });
  unzip.register(UnzipInflate);
  const step = 1 << 16;
  try {
    for (let at = 0; at < bytes.length; at += step) unzip.push(bytes.subarray(at, at + step), at + step >= bytes.length);
  } catch (err) {
    error ??= err as Error;
  }
  if (error) throw new Error(`the zip archive is damaged: ${error.message}`);
  if (open > 0) throw new Error("the zip archive ends in the middle of a file (cut short?)");
  return into;
}

async function readPath(path: string): Promise<SourceRead> {
  const info = await stat(path);
  const into: SourceRead = { advisories: [], skipped: 0 };
  if (info.isDirectory()) {
    const names = (await readdir(path, { recursive: true })).filter((n) => n.endsWith(".json") || n.endsWith(".zip")).sort();
    for (const name of names) {
      const bytes = await readFile(join(path, name));
      if (name.endsWith(".zip")) readZip(bytes, into);
      else recordsOf(bytes.toString("utf8"), into);
    }
    return into;
  }
  const bytes = await readFile(path);
  if (isZip(bytes)) return readZip(bytes, into);
  recordsOf(bytes.toString("utf8"), into);
  return into;
}

async function readUrl(url: string): Promise<SourceRead> {
  const res = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), redirect: "follow" });
  if (res.status !== 200) throw new Error(`answered ${res.status} ${res.statusText}`.trim());
  const bytes = new Uint8Array(await res.arrayBuffer());
  if (isZip(bytes)) return readZip(bytes);
  const into: SourceRead = { advisories: [], skipped: 0 };
  recordsOf(Buffer.from(bytes).toString("utf8"), into);
  return into;
}

/**
 * One entry of svc.advisories.sources: a folder (its `.json` records and `.zip` exports, in
 * sub-folders too), a file (a zip or a JSON record or array), or an https URL (a zip or JSON).
 * Throws when it cannot be read; a file in it that is no OSV record is counted, not fatal.
 */
export async function readSource(source: string): Promise<SourceRead> {
  return /^https:\/\//i.test(source) ? readUrl(source) : readPath(source);
}
