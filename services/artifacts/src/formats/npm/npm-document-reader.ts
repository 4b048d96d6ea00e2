import { createHash } from "node:crypto";
import { PassThrough, type Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { getManyValues, isMany, none } from "stream-chain/defs.js";
import { jsonParser, type Token } from "stream-json/core/parser.js";
import { ServiceError, invalid } from "@svc/contracts";
import { KEPT_FIELDS } from "./npm-documents.js";

/** What an npm document may hold (docs/integration/npm.md, "Limits"). */
export interface NpmDocumentLimits {
  /** The whole document but its tarball's base64 data (an edit sends the whole package document back). */
  documentBytes: number;
  /** One version's manifest as sent, readme included. */
  manifestBytes: number;
  /** One field of a version's manifest (its readme too), and the document's own readme, name and dist-tags. */
  fieldBytes: number;
}

const MiB = 1024 * 1024;
export const NPM_DOCUMENT_LIMITS: NpmDocumentLimits = { documentBytes: 32 * MiB, manifestBytes: 2 * MiB, fieldBytes: MiB };

/** The document's own fields that are read (the rest is counted and dropped as it goes by). */
const DOCUMENT_FIELDS = new Set(["name", "versions", "dist-tags", "_attachments", "readme"]);
/** Fields of an attachment kept beside its data. */
const ATTACHMENT_FIELDS = new Set(["content_type", "length"]);

export type Doc = Record<string, unknown>;

/** The tarball of a publish, as its base64 is read: the decoded bytes, to be stored as they come. */
export interface IncomingTarball {
  /** Its name in `_attachments`. */
  name: string;
  content: Readable;
}

export interface TarballDigests {
  size: number;
  sha1: string;
  /** Base64, as in an integrity string. */
  sha512: string;
}

export interface ReadDocument {
  /**
   * The fields of the document that are read, in objects without a prototype (no key a client
   * sends can reach one): `name`, `versions` (each manifest's fields that clients read, only
   * `deprecated` once there are two versions: an edit), `dist-tags`, `_attachments` (without
   * the tarball's data), `readme`.
   */
  document: Doc;
  /** The tarball's digests, when one was streamed out. */
  tarball?: TarballDigests;
}

export interface ReadOptions {
  /** Whether the tarball is wanted (a publish): its data then goes to `onTarball` as it is read, else it is read past. */
  onTarball?: (tarball: IncomingTarball) => void;
  limits?: NpmDocumentLimits;
}

const tooLarge = (what: string) => new ServiceError("payload_too_large", `${what}: nothing was stored`);
const size = (bytes: number) => (bytes % MiB === 0 ? `${bytes / MiB} MiB` : bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`);
/** A client's key in an error message: quoted, and cut if long. */
const quoted = (key: string) => JSON.stringify(key.length > 80 ? `${key.slice(0, 80)}…` : key);

/** Characters a base64 decoder is not to see (padding, line breaks). */
const NOT_BASE64 = /[^A-Za-z0-9+/_-]/;
const NOT_BASE64_ALL = /[^A-Za-z0-9+/_-]/g;

interface Frame {
  /** Undefined: a value read past (not kept). */
  value: Doc | unknown[] | undefined;
  /** In an object, the key of the value being read. */
  key: string | undefined;
  array: boolean;
}

interface Limit {
  /** What is over its limit, for the 413's message. */
  what: string;
  /** The count of JSON text at which it is passed. */
  until: number;
  /** The depth of the value it bounds (it ends with it). */
  depth: number;
}

/** What happens to a value at a path: kept, read past, or (the tarball's data) streamed out. */
type Fate = "keep" | "drop" | "tarball";

/**
 * Reads an npm document (a publish, or an edit sent back) from a request body as it arrives,
 * with stream-json's tokenizer: the tarball's base64 (`_attachments.<file>.data`) is decoded
 * and handed on as it is read, with its SHA-1 and SHA-512, and never held; the rest is capped
 * (NpmDocumentLimits, 413) and only what is read is built. A body that is not a JSON object is
 * a 400. On failure the tarball's stream is destroyed with the error, and the rest of the body
 * is left to drain (so the caller's answer reaches the client).
 */
export function readNpmDocument(body: Readable, opts: ReadOptions = {}): Promise<ReadDocument> {
  const limits = opts.limits ?? NPM_DOCUMENT_LIMITS;
  const tokenizer = jsonParser({ packValues: false });
  const decoder = new StringDecoder("utf8");
  const stack: Frame[] = [];
  const caps: Limit[] = [];
  let root: Doc | undefined;
  /** The JSON text counted (strings, keys, numbers, literals and brackets) but the tarball's data. */
  let text = 0;
  let received = 0;
  let tarballChars = 0;
  let versionCount = 0;
  let edit = false;
  // The value being read: a key's or a string's pieces, a number's, and what becomes of it.
  let pieces: string[] | undefined;
  let fate: Fate = "drop";
  let inKey = false;
  // The tarball.
  let tarball: { name: string; content: PassThrough; sha1: ReturnType<typeof createHash>; sha512: ReturnType<typeof createHash>; size: number; carry: string; base64: string[] } | undefined;
  let digests: TarballDigests | undefined;

  const count = (n: number) => {
    text += n;
    for (const c of caps) if (text > c.until) throw tooLarge(c.what);
  };
  const capField = (field: string, depth: number) => caps.push({ what: `${field} is over the ${size(limits.fieldBytes)} limit of one field of an npm document`, until: text + limits.fieldBytes, depth });

  /**
   * What becomes of a value starting here, and the limits it is under. The path: the root
   * object's current key (stack[0]), then the key in that field (stack[1]: a version, an
   * attachment), then the key in that (stack[2]: a manifest's field, an attachment's).
   */
  const begin = (kind: "object" | "array" | "string" | "scalar"): Fate => {
    const depth = stack.length;
    if (depth === 0) {
      if (kind !== "object") throw invalid("body", "the body must be a JSON object");
      return "keep";
    }
    const parent = stack[depth - 1]!;
    if (parent.value === undefined) return "drop";
    if (depth === 1) {
      const field = parent.key!;
      if (!DOCUMENT_FIELDS.has(field)) return "drop";
      if (field !== "versions" && field !== "_attachments") capField(field, depth);
      return "keep";
    }
    const top = stack[0]!.key;
    const inner = stack[1]!;
    if (inner.array || depth > 3 || (depth === 3 && parent.array)) return "keep";
    if (top === "versions" && depth === 2) {
      if (++versionCount === 2) {
        // Two versions: not a publish (it carries one) but a document sent back edited, of which
        // only the deprecation is read. The first manifest is cut down to it.
        edit = true;
        for (const m of Object.values(parent.value as Doc)) if (m !== null && typeof m === "object") for (const f of Object.keys(m)) if (f !== "deprecated") delete (m as Doc)[f];
      }
      caps.push({ what: `the manifest of version ${quoted(inner.key!)} is over the ${size(limits.manifestBytes)} limit`, until: text + limits.manifestBytes, depth });
      return "keep";
    }
    if (top === "versions" && depth === 3) {
      const field = parent.key!;
      capField(`versions[${quoted(inner.key!)}].${field}`, depth);
      return (edit ? field === "deprecated" : KEPT_FIELDS.has(field)) ? "keep" : "drop";
    }
    if (top === "_attachments" && depth === 3) {
      const field = parent.key!;
      if (field === "data" && kind === "string" && opts.onTarball) return "tarball";
      return ATTACHMENT_FIELDS.has(field) ? "keep" : "drop";
    }
    return "keep";
  };

  /** A value read: set in its parent (when kept), and the limits it was under released. */
  const end = (value: unknown) => {
    const depth = stack.length;
    while (caps.length > 0 && caps[caps.length - 1]!.depth >= depth) caps.pop();
    if (depth === 0) {
      root = value as Doc;
      return;
    }
    const parent = stack[depth - 1]!;
    if (parent.value === undefined || value === undefined) return;
    if (parent.array) (parent.value as unknown[]).push(value);
    else (parent.value as Doc)[parent.key!] = value;
  };

  const open = (array: boolean) => {
    const f = begin(array ? "array" : "object");
    count(1);
    stack.push({ value: f === "keep" ? (array ? [] : (Object.create(null) as Doc)) : undefined, key: undefined, array });
  };
  const close = () => {
    count(1);
    end(stack.pop()!.value);
  };

  const startTarball = () => {
    if (tarball || digests) throw invalid("_attachments", "a publish carries exactly one tarball in _attachments");
    const content = new PassThrough({ highWaterMark: 256 * 1024 });
    // Its reader's failure is its own to report; here it only stops the reading (drained()).
    content.on("error", () => {});
    tarball = { name: stack[1]!.key!, content, sha1: createHash("sha1"), sha512: createHash("sha512"), size: 0, carry: "", base64: [] };
    opts.onTarball!({ name: tarball.name, content });
  };

  /** Decodes the base64 read so far (whole groups of four; all of it at the end) and hands the bytes on. */
  const flushTarball = (last: boolean) => {
    const t = tarball!;
    let b64 = t.carry + t.base64.join("");
    t.base64.length = 0;
    if (NOT_BASE64.test(b64)) b64 = b64.replace(NOT_BASE64_ALL, "");
    const whole = last ? b64.length : b64.length - (b64.length % 4);
    t.carry = b64.slice(whole);
    if (whole === 0) return;
    const bytes = Buffer.from(b64.slice(0, whole), "base64");
    t.size += bytes.length;
    t.sha1.update(bytes);
    t.sha512.update(bytes);
    t.content.write(bytes);
  };
  const endTarball = () => {
    flushTarball(true);
    const t = tarball!;
    digests = { size: t.size, sha1: t.sha1.digest("hex"), sha512: t.sha512.digest("base64") };
    t.content.end();
    tarball = undefined;
  };

  const onToken = (token: Token) => {
    switch (token.name) {
      case "startObject":
        return open(false);
      case "startArray":
        return open(true);
      case "endObject":
      case "endArray":
        return close();
      case "startKey":
        inKey = true;
        pieces = [];
        return count(2);
      case "endKey":
        inKey = false;
        stack[stack.length - 1]!.key = pieces!.join("");
        pieces = undefined;
        return;
      case "startString":
        fate = begin("string");
        if (fate === "tarball") return startTarball();
        pieces = fate === "keep" ? [] : undefined;
        return count(2);
      case "stringChunk":
        if (!inKey && fate === "tarball") {
          tarballChars += token.value.length;
          tarball!.base64.push(token.value);
          return;
        }
        count(Buffer.byteLength(token.value));
        pieces?.push(token.value);
        return;
      case "endString":
        if (fate === "tarball") endTarball();
        else end(pieces?.join(""));
        pieces = undefined;
        fate = "drop";
        return;
      case "startNumber":
        fate = begin("scalar");
        pieces = fate === "keep" ? [] : undefined;
        return;
      case "numberChunk":
        count(token.value.length);
        pieces?.push(token.value);
        return;
      case "endNumber":
        end(pieces ? Number(pieces.join("")) : undefined);
        pieces = undefined;
        return;
      case "nullValue":
      case "trueValue":
      case "falseValue":
        fate = begin("scalar");
        count(4);
        return end(fate === "keep" ? token.value : undefined);
      default:
        return;
    }
  };

  const feed = (input: string | typeof none) => {
    let out;
    try {
      out = tokenizer(input as string);
    } catch (err) {
      throw invalid("body", `the body is not valid JSON (${(err as Error).message})`);
    }
    if (isMany(out)) for (const token of getManyValues(out) as Token[]) onToken(token);
    if (tarball && tarball.base64.length > 0) flushTarball(false);
  };

  const take = (bytes: Buffer) => {
    received += bytes.length;
    feed(decoder.write(bytes));
    if (received - tarballChars > limits.documentBytes) throw tooLarge(`the npm document is over the ${size(limits.documentBytes)} limit (its tarball not counted)`);
    if (tarball?.content.destroyed) throw new Error("the tarball's store stopped reading it");
  };
  const finish = (): ReadDocument => {
    const rest = decoder.end();
    if (rest) feed(rest);
    feed(none);
    if (!root) throw invalid("body", "the body is not valid JSON");
    return { document: root, ...(digests ? { tarball: digests } : {}) };
  };

  // Read with 'data' events, paused while the tarball's reader catches up: on failure the rest
  // of the body flows on and is dropped, so the connection lives to carry the answer.
  return new Promise<ReadDocument>((resolve, reject) => {
    let over = false;
    const fail = (err: unknown) => {
      if (over) return;
      over = true;
      body.off("data", onData);
      body.off("end", onEnd);
      // Still listening for errors (fail() is idempotent): one after this is not unhandled.
      tarball?.content.destroy(err as Error);
      body.resume();
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      try {
        take(chunk);
      } catch (err) {
        return fail(err);
      }
      const content = tarball?.content;
      if (!content?.writableNeedDrain) return;
      body.pause();
      drained(content).then(() => {
        if (!over) body.resume();
      }, fail);
    };
    const onEnd = () => {
      if (over) return;
      try {
        const out = finish();
        over = true;
        resolve(out);
      } catch (err) {
        fail(err);
      }
    };
    body.on("data", onData);
    body.once("end", onEnd);
    // Not once: the signature's check may fail the body after an earlier failure was answered.
    body.on("error", fail);
  });
}

/** Resolves when the tarball's reader wants more; fails when it has gone (its store failed: that error is the one reported). */
function drained(content: PassThrough): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (err?: Error) => {
      content.off("drain", ok);
      content.off("close", gone);
      if (err) reject(err);
      else resolve();
    };
    const ok = () => done();
    const gone = () => done(new Error("the tarball's store stopped reading it"));
    content.once("drain", ok);
    content.once("close", gone);
  });
}
