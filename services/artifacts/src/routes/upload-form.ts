import { PassThrough, type Readable } from "node:stream";
import { Busboy, type BusboyInstance } from "@fastify/busboy";
import { ServiceError, invalid } from "@svc/contracts";

export interface FormLimits {
  files: number;
  fields: number;
  /** Bytes of one field's value. */
  fieldSize: number;
  /** Fields that may be longer than `fieldSize`, with their own cap in bytes. */
  longFields?: Readonly<Record<string, number>>;
  /** Bytes of all fields' values together (the file not counted). */
  fieldsSize: number;
  parts: number;
}

/** A byte count as a limit is said: whole MiB as MiB, else KiB. */
export const bytesSaid = (n: number): string => (n % 1048576 === 0 ? `${n / 1048576} MiB` : `${Math.round(n / 1024)} KiB`);

/**
 * Reads a multipart/form-data body part by part, streaming: each field is collected (at most
 * `fieldSize` bytes, or its `longFields` cap, and `fieldsSize` for all together: past a cap the
 * form is refused with 413 and the rest of the body is drained, never kept), and the
 * first file part named `file` is handed to `onFile` with the fields seen before it (a form's
 * order is its contract: metadata first) while the body is still arriving; other file parts are
 * discarded. `body` is the payload fastify hands over, which fails at its end unless it is the
 * body the gateway signed (createBaseApp): the file's stream ends only once the whole body has
 * passed that check, so whoever stores it never commits a file from a body that fails it, even
 * though the file's own bytes end before the body does.
 */
export function readForm<T>(
  body: Readable,
  contentType: string,
  limits: FormLimits,
  file: string,
  onFile: (fields: Record<string, string>, filename: string, stream: Readable) => Promise<T>,
): Promise<{ fields: Record<string, string>; file?: T }> {
  return new Promise((resolve, reject) => {
    const fields: Record<string, string> = Object.create(null) as Record<string, string>;
    let form: BusboyInstance;
    try {
      // Busboy keeps at most this much of a field; each field's own cap is checked below.
      const longest = Math.max(limits.fieldSize, ...Object.values(limits.longFields ?? {}));
      form = Busboy({ headers: { "content-type": contentType }, limits: { files: limits.files, fields: limits.fields, parts: limits.parts, fieldSize: longest, fileSize: Infinity } });
    } catch (err) {
      reject(invalid("body", `the upload form cannot be read: ${(err as Error).message}`));
      return;
    }
    let kept: PassThrough | undefined;
    let handled: Promise<T> | undefined;
    let keptEnded = false;
    let parsed = false;
    let failed = false;

    const fail = (err: Error) => {
      if (failed) return;
      failed = true;
      body.unpipe(form);
      kept?.destroy(err);
      // The first failure is the cause (the body not the one signed, a refusal of the file); the
      // answer waits until whoever stores the file has let go of it.
      if (handled) handled.then(() => reject(err), () => reject(err));
      else reject(err);
    };
    const release = () => {
      if (kept && keptEnded && parsed && !failed) kept.end();
    };
    const tooLarge = (what: string) => () => fail(new ServiceError("payload_too_large", `the upload form has more ${what} than an upload takes (at most ${limitOf(what)})`));
    const limitOf = (what: string) => (what === "parts" ? limits.parts : what === "files" ? limits.files : limits.fields);

    let fieldBytes = 0;
    form.on("field", (name: string, value: string, _nameTruncated: boolean, valueTruncated: boolean) => {
      if (failed) return;
      const cap = Object.hasOwn(limits.longFields ?? {}, name) ? limits.longFields![name]! : limits.fieldSize;
      const bytes = Buffer.byteLength(value);
      if (valueTruncated || bytes > cap) return fail(new ServiceError("payload_too_large", `the form field ${name.slice(0, 100)} is longer than ${bytesSaid(cap)}`));
      fieldBytes += bytes;
      if (fieldBytes > limits.fieldsSize) return fail(new ServiceError("payload_too_large", `the form fields together are longer than ${bytesSaid(limits.fieldsSize)}`));
      fields[name] = value;
    });
    form.on("file", (name: string, stream: Readable, filename: string) => {
      if (name !== file || kept || failed) {
        stream.resume();
        return;
      }
      kept = new PassThrough();
      const own = kept;
      // Its reader sees a failure through its own read; one that did not read it (a refusal before) need not.
      own.on("error", () => {});
      stream.pipe(own, { end: false });
      stream.once("end", () => {
        keptEnded = true;
        release();
      });
      stream.once("error", (err: Error) => fail(err));
      try {
        handled = onFile({ ...fields }, filename, own);
      } catch (err) {
        stream.resume();
        return fail(err as Error);
      }
      handled.catch((err: Error) => fail(err));
    });
    form.on("partsLimit", tooLarge("parts"));
    form.on("filesLimit", tooLarge("files"));
    form.on("fieldsLimit", tooLarge("fields"));
    form.on("error", (err: Error) => fail(invalid("body", `the upload form is malformed: ${err.message}`)));
    // The body's own failure (not the one signed, cut when it stalled, abandoned) is what happened.
    body.on("error", (err: Error) => fail(err));
    // The body has ended and passed its check before the form sees its end: the file may end now.
    form.on("finish", () => {
      parsed = true;
      release();
      if (failed) return;
      if (!handled) return resolve({ fields });
      handled.then((done) => {
        if (!failed) resolve({ fields, file: done });
      }, fail);
    });
    body.pipe(form);
  });
}
