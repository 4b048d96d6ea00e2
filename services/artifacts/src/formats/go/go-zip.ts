import { inflateRawSync } from "node:zlib";
import { ServiceError, invalid } from "@svc/contracts";
import { filePathError } from "./go-module.js";

/** golang.org/x/mod/zip's limits: the zip file, and the total of its files uncompressed. */
export const MAX_ZIP_FILE = 500 * 1024 * 1024;
/** A go.mod's limit, and a LICENSE's at the module root. */
export const MAX_GO_MOD = 16 * 1024 * 1024;
export const MAX_LICENSE = 16 * 1024 * 1024;
/** The most of a central directory read into memory (about a million files' worth). */
const MAX_DIRECTORY = 128 * 1024 * 1024;

/** Bytes `start` to `end` of the zip, inclusive (as HTTP ranges count). */
export type ReadRange = (start: number, end: number) => Promise<Buffer>;

interface Entry {
  name: string;
  method: number;
  flags: number;
  crc: number;
  compressed: number;
  size: number;
  offset: number;
}

const EOCD = 0x06054b50;
const EOCD64 = 0x06064b50;
const EOCD64_LOCATOR = 0x07064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

const payloadTooLarge = (message: string) => new ServiceError("payload_too_large", message);
const bad = (why: string) => invalid("zip", `the upload is not a module zip the go command can read: ${why}`);

/** The central directory's entries (zip64 too), read from the end of the file. */
async function entriesOf(read: ReadRange, size: number): Promise<Entry[]> {
  if (size < 22) throw bad("it is too short to be a zip file");
  const tailStart = Math.max(0, size - (22 + 0xffff));
  const tail = await read(tailStart, size - 1);
  let at = -1;
  for (let i = tail.length - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) === EOCD) {
      at = i;
      break;
    }
  }
  if (at < 0) throw bad("it has no end of central directory record");
  let count = tail.readUInt16LE(at + 10);
  let dirSize = tail.readUInt32LE(at + 12);
  let dirOffset = tail.readUInt32LE(at + 16);
  if (count === 0xffff || dirSize === 0xffffffff || dirOffset === 0xffffffff) {
    const loc = at - 20;
    if (loc < 0 || tail.readUInt32LE(loc) !== EOCD64_LOCATOR) throw bad("its zip64 end of central directory locator is missing");
    const recAt = Number(tail.readBigUInt64LE(loc + 8));
    if (recAt + 56 > size) throw bad("its zip64 end of central directory record is outside the file");
    const rec = await read(recAt, recAt + 55);
    if (rec.readUInt32LE(0) !== EOCD64) throw bad("its zip64 end of central directory record is missing");
    count = Number(rec.readBigUInt64LE(32));
    dirSize = Number(rec.readBigUInt64LE(40));
    dirOffset = Number(rec.readBigUInt64LE(48));
  }
  if (dirOffset + dirSize > size) throw bad("its central directory is outside the file");
  if (dirSize > MAX_DIRECTORY) throw payloadTooLarge(`the zip's central directory is larger than ${MAX_DIRECTORY} bytes`);
  const dir = dirSize === 0 ? Buffer.alloc(0) : await read(dirOffset, dirOffset + dirSize - 1);
  const names = new TextDecoder("utf-8", { fatal: true });
  const entries: Entry[] = [];
  let p = 0;
  for (let n = 0; n < count; n++) {
    if (p + 46 > dir.length || dir.readUInt32LE(p) !== CENTRAL) throw bad("its central directory is cut short or corrupt");
    const flags = dir.readUInt16LE(p + 8);
    const method = dir.readUInt16LE(p + 10);
    const crc = dir.readUInt32LE(p + 16);
    let compressed = dir.readUInt32LE(p + 20);
    let uncompressed = dir.readUInt32LE(p + 24);
    const nameLen = dir.readUInt16LE(p + 28);
    const extraLen = dir.readUInt16LE(p + 30);
    const commentLen = dir.readUInt16LE(p + 32);
    let offset = dir.readUInt32LE(p + 42);
    const end = p + 46 + nameLen + extraLen + commentLen;
    if (end > dir.length) throw bad("its central directory is cut short");
    let name: string;
    try {
      name = names.decode(dir.subarray(p + 46, p + 46 + nameLen));
    } catch {
      throw bad("a file name in it is not valid UTF-8");
    }
    // The zip64 extra field carries the sizes and offset that did not fit, in this order.
    for (let x = p + 46 + nameLen; x + 4 <= p + 46 + nameLen + extraLen; ) {
      const id = dir.readUInt16LE(x);
      const len = dir.readUInt16LE(x + 2);
      if (id === 0x0001) {
        let f = x + 4;
        const next = () => {
          const v = f + 8 <= x + 4 + len ? Number(dir.readBigUInt64LE(f)) : undefined;
          f += 8;
          if (v === undefined) throw bad(`the zip64 field of ${name} is cut short`);
          return v;
        };
        if (uncompressed === 0xffffffff) uncompressed = next();
        if (compressed === 0xffffffff) compressed = next();
        if (offset === 0xffffffff) offset = next();
      }
      x += 4 + len;
    }
    entries.push({ name, method, flags, crc, compressed, size: uncompressed, offset });
    p = end;
  }
  return entries;
}

/** Case folding for collisions (x/mod/zip's strToFold): two names equal under it name one file on a case-insensitive disk. */
const fold = (s: string): string => s.toUpperCase().toLowerCase();

let crcTable: Uint32Array | undefined;
function crc32(b: Buffer): number {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let c = 0xffffffff;
  for (const byte of b) c = crcTable[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** One entry's bytes, uncompressed and checked against its declared size and CRC-32. */
async function contentOf(read: ReadRange, size: number, e: Entry, limit: number): Promise<Buffer> {
  if (e.offset + 30 > size) throw bad(`the local header of ${e.name} is outside the file`);
  const header = await read(e.offset, e.offset + 29);
  if (header.readUInt32LE(0) !== LOCAL) throw bad(`the local header of ${e.name} is missing`);
  const start = e.offset + 30 + header.readUInt16LE(26) + header.readUInt16LE(28);
  if (start + e.compressed > size) throw bad(`the data of ${e.name} is outside the file`);
  const raw = e.compressed === 0 ? Buffer.alloc(0) : await read(start, start + e.compressed - 1);
  let data: Buffer;
  try {
    data = e.method === 0 ? raw : inflateRawSync(raw, { maxOutputLength: limit + 1 });
  } catch {
    throw bad(`${e.name} does not decompress`);
  }
  if (data.length !== e.size) throw bad(`${e.name} is ${data.length} bytes uncompressed, not the ${e.size} its header declares`);
  if (crc32(data) !== e.crc) throw bad(`${e.name} does not match its CRC-32`);
  return data;
}

/** What a checked module zip holds that the proxy serves besides it: its go.mod (undefined when it has none). */
export interface CheckedZip {
  goMod: Buffer | undefined;
  files: number;
}

/**
 * Checks a module zip as the go command does before it extracts one (x/mod/zip's CheckZip): the
 * zip's size, every file under `<module>@<version>/` with a valid path, no two names equal under
 * case folding, a file never also a folder, go.mod only at the root and spelt so, the go.mod,
 * LICENSE and total uncompressed size limits; and, beyond it, only the store and deflate methods
 * (what the go command reads) and no encryption. Answers the root go.mod's bytes.
 */
export async function checkModuleZip(read: ReadRange, size: number, module: string, version: string): Promise<CheckedZip> {
  if (size > MAX_ZIP_FILE) throw payloadTooLarge(`module zip file is too large (${size} bytes; limit is ${MAX_ZIP_FILE} bytes)`);
  const entries = await entriesOf(read, size);
  const prefix = `${module}@${version}/`;
  const seen = new Map<string, { path: string; dir: boolean }>();
  const collide = (p: string, dir: boolean): string | undefined => {
    const key = fold(p);
    const other = seen.get(key);
    if (other) {
      if (other.path !== p) return `case-insensitive file name collision: ${JSON.stringify(other.path)} and ${JSON.stringify(p)}`;
      if (other.dir !== dir) return `entry ${JSON.stringify(p)} is both a file and a directory`;
      if (!dir) return `multiple entries for file ${JSON.stringify(p)}`;
    } else seen.set(key, { path: p, dir });
    const slash = p.lastIndexOf("/");
    return slash > 0 ? collide(p.slice(0, slash), true) : undefined;
  };
  let total = 0;
  let goMod: Entry | undefined;
  let files = 0;
  for (const e of entries) {
    const fail = (why: string) => bad(`${e.name}: ${why}`);
    if (!e.name.startsWith(prefix)) throw fail(`path does not have prefix ${JSON.stringify(prefix)} (every file of a module zip is under <module>@<version>/)`);
    let name = e.name.slice(prefix.length);
    if (name === "") continue;
    const dir = name.endsWith("/");
    if (dir) name = name.slice(0, -1);
    const why = filePathError(name);
    if (why) throw fail(`malformed file path ${JSON.stringify(name)}: ${why}`);
    const clash = collide(name, dir);
    if (clash) throw fail(clash);
    if (dir) continue;
    if (e.flags & 1) throw fail("the file is encrypted");
    if (e.method !== 0 && e.method !== 8) throw fail(`compression method ${e.method} is not one the go command reads (store or deflate)`);
    const base = name.slice(name.lastIndexOf("/") + 1);
    if (base.toLowerCase() === "go.mod") {
      if (base !== name) throw fail("go.mod file not in module root directory");
      if (name !== "go.mod") throw fail("go.mod files must have lowercase names");
      goMod = e;
    }
    total += e.size;
    if (total > MAX_ZIP_FILE) throw payloadTooLarge(`total uncompressed size of module contents too large (max size is ${MAX_ZIP_FILE} bytes)`);
    if (name === "go.mod" && e.size > MAX_GO_MOD) throw payloadTooLarge(`go.mod file too large (max size is ${MAX_GO_MOD} bytes)`);
    if (name === "LICENSE" && e.size > MAX_LICENSE) throw payloadTooLarge(`LICENSE file too large (max size is ${MAX_LICENSE} bytes)`);
    files++;
  }
  return { goMod: goMod ? await contentOf(read, size, goMod, MAX_GO_MOD) : undefined, files };
}

/** Go's quoted strings as go.mod writes a module path: "…" with escapes, or `…`. */
function unquote(s: string): string | undefined {
  if (s.startsWith("`")) return s.endsWith("`") && s.length >= 2 ? s.slice(1, -1) : undefined;
  try {
    const v: unknown = JSON.parse(s);
    return typeof v === "string" ? v : undefined;
  } catch {
    return undefined;
  }
}

/** The module path a go.mod declares (`module example.com/m`, quoted, or in a `module ( … )` block); undefined when it declares none. */
export function moduleOfGoMod(text: string): string | undefined {
  const lines = text.split(/\r?\n/).map((l) => l.replace(/\/\/.*$/, "").trim());
  for (let i = 0; i < lines.length; i++) {
    const m = /^module(?:\s+(.*)|\s*\()$/.exec(lines[i]!);
    if (!m) continue;
    const v = m[1]?.trim() ?? "(";
    if (v === "(") {
      const inner = lines.slice(i + 1).find((l) => l !== "");
      return inner === undefined || inner === ")" ? undefined : /^["`]/.test(inner) ? unquote(inner) : inner;
    }
    return /^["`]/.test(v) ? unquote(v) : v.split(/\s/)[0];
  }
  return undefined;
}
