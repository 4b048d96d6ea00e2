import { describe, expect, it } from "vitest";
import { OciError } from "./oci-errors.js";
import { parseDigest, parseOciRoute } from "./oci-path.js";

const A = "a".repeat(64);
const codeOf = (url: string) => {
  try {
    parseOciRoute(url);
  } catch (err) {
    return (err as OciError).code;
  }
  return undefined;
};

describe("OCI routes", () => {
  it("reads the repository, the image name (with slashes) and what is asked", () => {
    expect(parseOciRoute(`/v2/oci/team/app/blobs/sha256:${A}`)).toMatchObject({ kind: "blob", repository: "oci", name: "team/app", digest: { algorithm: "sha256", hex: A } });
    expect(parseOciRoute("/v2/oci/app/blobs/uploads/?digest=x")).toEqual({ kind: "uploads", repository: "oci", name: "app" });
    expect(parseOciRoute("/v2/oci/app/blobs/uploads/0b6b4c4e-2f4a-4b7a-9d8e-1f2a3b4c5d6e")).toMatchObject({ kind: "upload", id: "0b6b4c4e-2f4a-4b7a-9d8e-1f2a3b4c5d6e" });
    expect(parseOciRoute("/v2/oci/a/b/c/manifests/v1.0")).toEqual({ kind: "manifest", repository: "oci", name: "a/b/c", reference: "v1.0" });
    expect(parseOciRoute("/v2/oci/app/tags/list?n=2")).toEqual({ kind: "tags", repository: "oci", name: "app" });
    expect(parseOciRoute(`/v2/oci/app/referrers/sha256:${A}`)).toMatchObject({ kind: "referrers", name: "app" });
    // An image may be named like a route word: the last one counts.
    expect(parseOciRoute("/v2/oci/tags/manifests/latest")).toMatchObject({ kind: "manifest", name: "tags" });
  });

  it("refuses names outside the spec's grammar, unknown uploads and bad digests with their codes", () => {
    expect(codeOf("/v2/oci/Team/manifests/latest")).toBe("NAME_INVALID");
    expect(codeOf("/v2/-x/app/manifests/latest")).toBe("NAME_INVALID");
    expect(codeOf("/v2/oci/app/blobs/uploads/not-an-id")).toBe("BLOB_UPLOAD_UNKNOWN");
    expect(codeOf("/v2/oci/app/blobs/md5:abc")).toBe("DIGEST_INVALID");
    expect(codeOf("/v2/oci/app/manifests/-bad")).toBe("MANIFEST_INVALID");
    expect(codeOf("/v2/oci/app/whatever")).toBe("NAME_UNKNOWN");
  });

  it("supports sha256 and sha512 digests of their exact lengths, lowercase", () => {
    expect(parseDigest(`sha512:${"b".repeat(128)}`)).toMatchObject({ algorithm: "sha512" });
    expect(parseDigest(`sha256:${"b".repeat(128)}`)).toBeUndefined();
    expect(parseDigest(`sha256:${"B".repeat(64)}`)).toBeUndefined();
    expect(parseDigest(`sha384:${"b".repeat(96)}`)).toBeUndefined();
  });
});
