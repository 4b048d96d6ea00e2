import { describe, expect, it } from "vitest";
import { referencesOf } from "./oci-gc.js";
import { parseManifest } from "./oci-manifest.js";

const d = (c: string) => `sha256:${c.repeat(64)}`;
const doc = (o: object) => Buffer.from(JSON.stringify({ schemaVersion: 2, ...o }));

describe("what a manifest keeps from garbage collection", () => {
  it("an image keeps its config and layers, each once, and not its subject", () => {
    const m = parseManifest(doc({ mediaType: "application/vnd.oci.image.manifest.v1+json", config: { digest: d("a") }, layers: [{ digest: d("b") }, { digest: d("b") }], subject: { digest: d("c") } }), undefined);
    expect(referencesOf(m)).toEqual({ blobs: [d("a"), d("b")], manifests: [] });
  });
  it("an index keeps its child manifests", () => {
    const m = parseManifest(doc({ mediaType: "application/vnd.oci.image.index.v1+json", manifests: [{ digest: d("d") }, { digest: d("e") }] }), undefined);
    expect(referencesOf(m)).toEqual({ blobs: [], manifests: [d("d"), d("e")] });
  });
  it("a foreign layer is not the registry's to keep", () => {
    const m = parseManifest(doc({ mediaType: "application/vnd.oci.image.manifest.v1+json", config: { digest: d("a") }, layers: [{ mediaType: "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip", digest: d("f") }] }), undefined);
    expect(referencesOf(m).blobs).toEqual([d("a")]);
  });
});
