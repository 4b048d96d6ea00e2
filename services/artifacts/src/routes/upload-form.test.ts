import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { ServiceError } from "@svc/contracts";
import { readForm, type FormLimits } from "./upload-form.js";

const boundary = "----unit-form";
const TYPE = `multipart/form-data; boundary=${boundary}`;
const LIMITS: FormLimits = { files: 2, fields: 50, fieldSize: 1024, longFields: { description: 4096 }, fieldsSize: 6000, parts: 60 };

function formOf(fields: [string, string][], file = "the file"): Buffer {
  const parts = fields.map(([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
  parts.push(`--${boundary}\r\nContent-Disposition: form-data; name="content"; filename="x.whl"\r\n\r\n${file}\r\n--${boundary}--\r\n`);
  return Buffer.from(parts.join(""));
}

const read = (fields: [string, string][]) =>
  readForm(Readable.from([formOf(fields)]), TYPE, LIMITS, "content", async (_fields, _name, stream) => {
    let n = 0;
    for await (const chunk of stream) n += (chunk as Buffer).length;
    return n;
  });

const refusal = async (fields: [string, string][]): Promise<ServiceError> => {
  const err = await read(fields).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ServiceError);
  return err as ServiceError;
};

describe("the upload form's limits", () => {
  it("takes fields up to their caps, the long one up to its own, and streams the file", async () => {
    const done = await read([["name", "x"], ["license", "l".repeat(1024)], ["description", "d".repeat(4096)]]);
    expect(done.file).toBe("the file".length);
    expect(done.fields.license).toHaveLength(1024);
  });

  it("refuses a field past its cap with 413, naming the field and the cap", async () => {
    const e = await refusal([["license", "l".repeat(1025)]]);
    expect(e.code).toBe("payload_too_large");
    expect(e.message).toBe("the form field license is longer than 1 KiB");
    expect((await refusal([["description", "d".repeat(4097)]])).message).toBe("the form field description is longer than 4 KiB");
    // Counted in bytes, as sent: 600 two-byte characters are 1200 bytes.
    expect((await refusal([["summary", "é".repeat(600)]])).message).toBe("the form field summary is longer than 1 KiB");
  });

  it("refuses fields that together pass their cap, each within its own", async () => {
    const e = await refusal(Array.from({ length: 8 }, (_, i) => [`classifiers_${i}`, "c".repeat(1000)] as [string, string]));
    expect(e.code).toBe("payload_too_large");
    expect(e.message).toBe("the form fields together are longer than 6 KiB");
  });
});
