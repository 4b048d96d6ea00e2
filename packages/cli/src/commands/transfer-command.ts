import { createReadStream, createWriteStream } from "node:fs";
import { rename, rm, stat } from "node:fs/promises";
import { basename } from "node:path";
import { Readable, Transform, type Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { localError, usageError } from "../cli-errors.js";
import { str, type Command, type CommandContext } from "../command-types.js";
import { progressBar } from "../progress-bar.js";
import { bytes, emit, renderFields } from "../table-output.js";

/** `<repository>/<path>` into the repository name and the request path, each segment percent-encoded. */
function artifact(target: string | undefined): { repository: string; path: string; urlPath: string } {
  const t = (target ?? "").replace(/^\/+/, "").replace(/^repository\//, "");
  const [repository, ...segments] = t.split("/");
  if (!repository || segments.length === 0 || segments.some((s) => s === "")) throw usageError(`"${target ?? ""}" is not <repository>/<path> (e.g. default/com/acme/app.jar).`);
  return { repository, path: segments.join("/"), urlPath: `/repository/${[repository, ...segments].map(encodeURIComponent).join("/")}` };
}

/** Counts the bytes passing through, for the progress bar; holds none of them. */
const counting = (add: (n: number) => void) =>
  new Transform({
    transform(chunk: Buffer, _enc, done) {
      add(chunk.length);
      done(null, chunk);
    },
  });

async function upload(ctx: CommandContext): Promise<void> {
  const [file, target] = ctx.args as [string, string];
  const a = artifact(target);
  let size: number;
  try {
    const st = await stat(file);
    if (!st.isFile()) throw Object.assign(new Error(), { code: "not a regular file" });
    size = st.size;
  } catch (err) {
    throw localError(`Cannot upload ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}.`);
  }
  const bar = progressBar({ label: `upload ${basename(file)}`, total: size, stream: ctx.stderr, enabled: ctx.progress });
  // Read as it is sent: the file is never held in memory whole.
  const body = Readable.toWeb(createReadStream(file).pipe(counting(bar.add))) as ReadableStream;
  const headers: Record<string, string> = { "content-length": String(size), "service-repository-name": a.repository, "content-type": str(ctx.values["content-type"]) ?? "application/octet-stream" };
  if (ctx.values["no-overwrite"] === true) headers["if-none-match"] = "*";
  const res = await (await ctx.api()).request("PUT", a.urlPath, { body, headers });
  bar.done();
  const stored = (await res.json()) as { repository: string; path: string; size: number; sha256: string };
  emit(ctx.out, { ...stored, created: res.status === 201 }, (v) =>
    renderFields([
      ["stored", `${v.repository}/${v.path} (${v.created ? "new" : "replaced"})`],
      ["size", `${v.size} bytes (${bytes(v.size)})`],
      ["sha256", v.sha256],
    ]),
  );
}

async function fetchArtifact(ctx: CommandContext): Promise<void> {
  const a = artifact(ctx.args[0]);
  const out = str(ctx.values.output) ?? basename(a.path);
  const res = await (await ctx.api()).request("GET", a.urlPath, { headers: { "service-repository-name": a.repository } });
  const length = Number(res.headers.get("content-length") ?? NaN);
  const bar = progressBar({ label: `fetch ${basename(a.path)}`, total: Number.isFinite(length) ? length : undefined, stream: ctx.stderr, enabled: ctx.progress });
  const source = Readable.fromWeb(res.body as import("node:stream/web").ReadableStream);
  let received = 0;
  const tally = counting((n) => {
    received += n;
    bar.add(n);
  });
  if (out === "-") {
    await pipeline(source, tally, ctx.stdout as Writable, { end: false });
    bar.done();
    return;
  }
  // Written beside the target and renamed when whole: an interrupted fetch never leaves half a file under its name.
  const partial = `${out}.part`;
  try {
    await pipeline(source, tally, createWriteStream(partial));
    await rename(partial, out);
  } catch (err) {
    await rm(partial, { force: true });
    const code = (err as NodeJS.ErrnoException).code;
    if (code && /^E[A-Z]+$/.test(code) && code !== "ECONNRESET") throw localError(`Cannot write ${out}: ${code}.`);
    throw localError(`The download of ${a.repository}/${a.path} broke off after ${received} bytes (${(err as Error).message}); nothing was written to ${out}.`);
  }
  bar.done();
  const summary = { repository: a.repository, path: a.path, file: out, size: received, etag: res.headers.get("etag") };
  emit(ctx.out, summary, (v) => `fetched ${v.repository}/${v.path} -> ${v.file} (${v.size} bytes, ${bytes(v.size)})`);
}

const progressNote = "A progress bar is drawn on standard error when it is a terminal (--progress forces it, --no-progress hides it).";

export const uploadCommand: Command = {
  name: "upload",
  summary: "publish a file to a raw repository, streamed, with a progress bar",
  subcommands: [
    {
      name: "",
      args: "<file> <repository>/<path>",
      minArgs: 2,
      maxArgs: 2,
      summary: `upload <file> to /repository/<repository>/<path>. ${progressNote}`,
      options: {
        "content-type": { type: "string", value: "type", description: "the media type to record (default application/octet-stream)" },
        "no-overwrite": { type: "boolean", description: "refuse (412) if something is already at the path" },
      },
      examples: ["svc upload build/app.jar default/com/acme/app/1.0/app.jar"],
      run: upload,
    },
  ],
};

export const fetchCommand: Command = {
  name: "fetch",
  summary: "download a file from a raw repository, streamed, with a progress bar",
  subcommands: [
    {
      name: "",
      args: "<repository>/<path>",
      minArgs: 1,
      maxArgs: 1,
      summary: `download /repository/<repository>/<path> into a file (default: the path's last segment in the current folder). ${progressNote}`,
      options: { output: { type: "string", short: "o", value: "file", description: "where to write it; - writes to standard output" } },
      examples: ["svc fetch default/com/acme/app/1.0/app.jar -o app.jar"],
      run: fetchArtifact,
    },
  ],
};
