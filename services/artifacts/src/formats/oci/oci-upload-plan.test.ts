import { describe, expect, it } from "vitest";
import { OciError } from "./oci-errors.js";
import { checkChunk, conflictingChunk, planChunk, rangeOf, requireDigest } from "./oci-upload-plan.js";

/** The refusal `f` throws, as a client sees it: status, code, Range. */
function refusal(f: () => unknown) {
  try {
    f();
  } catch (err) {
    if (!(err instanceof OciError)) throw err;
    return { status: err.status, code: err.code, range: err.opts.headers?.range };
  }
  throw new Error("nothing was refused");
}

describe("the upload state machine", () => {
  it("answers the Range of a session: 0-0 while empty, then up to the last byte held", () => {
    expect(rangeOf(0)).toBe("0-0");
    expect(rangeOf(1)).toBe("0-0");
    expect(rangeOf(100)).toBe("0-99");
  });

  it("a chunk without Content-Range is appended where the session ends, sized by Content-Length when sent", () => {
    expect(planChunk(500, undefined, undefined)).toEqual({ start: 500, expected: undefined });
    expect(planChunk(500, "", "20")).toEqual({ start: 500, expected: 20 });
  });

  it("a Content-Length that is no size is SIZE_INVALID", () => {
    expect(refusal(() => planChunk(0, undefined, "ten"))).toMatchObject({ status: 400, code: "SIZE_INVALID" });
    expect(refusal(() => planChunk(0, undefined, "-1"))).toMatchObject({ status: 400, code: "SIZE_INVALID" });
  });

  it("a chunk with Content-Range starting where the session ends is planned with its length (with or without a bytes unit and total)", () => {
    expect(planChunk(100, "100-199", "100")).toEqual({ start: 100, expected: 100 });
    expect(planChunk(100, "bytes 100-149/*", undefined)).toEqual({ start: 100, expected: 50 });
    expect(planChunk(0, "0-0", undefined)).toEqual({ start: 0, expected: 1 });
  });

  it("an out-of-order chunk is 416 BLOB_UPLOAD_INVALID with the session's Range", () => {
    expect(refusal(() => planChunk(100, "200-299", undefined))).toEqual({ status: 416, code: "BLOB_UPLOAD_INVALID", range: "0-99" });
    expect(refusal(() => planChunk(100, "0-99", undefined))).toEqual({ status: 416, code: "BLOB_UPLOAD_INVALID", range: "0-99" });
  });

  it("a malformed Content-Range, one ending before it starts, or one that disagrees with Content-Length is 416 with the Range", () => {
    expect(refusal(() => planChunk(0, "zero-ten", undefined))).toEqual({ status: 416, code: "BLOB_UPLOAD_INVALID", range: "0-0" });
    expect(refusal(() => planChunk(10, "10-5", undefined))).toEqual({ status: 416, code: "BLOB_UPLOAD_INVALID", range: "0-9" });
    expect(refusal(() => planChunk(10, "10-19", "5"))).toEqual({ status: 416, code: "BLOB_UPLOAD_INVALID", range: "0-9" });
  });

  it("a chunk received as announced is kept; one cut short or longer is refused with the session's Range", () => {
    expect(() => checkChunk({ start: 0, expected: 10 }, 10, 0)).not.toThrow();
    expect(() => checkChunk({ start: 0, expected: undefined }, 12345, 0)).not.toThrow();
    expect(refusal(() => checkChunk({ start: 5, expected: 10 }, 7, 5))).toEqual({ status: 416, code: "BLOB_UPLOAD_INVALID", range: "0-4" });
  });

  it("a chunk that lands after another request moved the session is refused with the session's new Range", () => {
    const err = conflictingChunk(100, 250);
    expect({ status: err.status, code: err.code, range: err.opts.headers?.range }).toEqual({ status: 416, code: "BLOB_UPLOAD_INVALID", range: "0-249" });
  });

  it("the closing PUT must name a digest", () => {
    expect(requireDigest("sha256:abc")).toBe("sha256:abc");
    expect(refusal(() => requireDigest(undefined))).toMatchObject({ status: 400, code: "DIGEST_INVALID" });
    expect(refusal(() => requireDigest(""))).toMatchObject({ status: 400, code: "DIGEST_INVALID" });
  });
});
