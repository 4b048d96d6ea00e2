import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { checkTarballDigest, mergePackuments, rewriteTarballUrls, type UpstreamPackument } from "./npm-proxy.js";

const doc = (name: string, versions: string[], latest: string, extra: Partial<UpstreamPackument> = {}): UpstreamPackument => ({
  name,
  "dist-tags": { latest },
  versions: Object.fromEntries(versions.map((v) => [v, { name, version: v, dist: { tarball: `https://registry.example/${name}/-/x-${v}.tgz`, shasum: "ab" } }])),
  ...extra,
});

describe("npm proxy", () => {
  it("rewrites tarball URLs to this server, scoped names included, keeping the other dist fields", () => {
    const out = rewriteTarballUrls(doc("@acme/left-pad", ["1.0.0"], "1.0.0"), "https://repo.example/npm/proxied/");
    expect(out.versions!["1.0.0"]!.dist).toEqual({ tarball: "https://repo.example/npm/proxied/@acme/left-pad/-/left-pad-1.0.0.tgz", shasum: "ab" });
    const original = doc("plain", ["2.0.0"], "2.0.0");
    rewriteTarballUrls(original, "https://repo.example/npm/p");
    expect(original.versions!["2.0.0"]!.dist!.tarball).toBe("https://registry.example/plain/-/x-2.0.0.tgz");
  });

  it("accepts a tarball matching its integrity or shasum and refuses one that does not", () => {
    const bytes = new TextEncoder().encode("tarball bytes");
    const sri = `sha512-${createHash("sha512").update(bytes).digest("base64")}`;
    const sha1 = createHash("sha1").update(bytes).digest("hex");
    expect(checkTarballDigest(bytes, { integrity: sri })).toEqual({ ok: true });
    expect(checkTarballDigest(bytes, { integrity: `sha1-zzz ${sri}` })).toEqual({ ok: true });
    expect(checkTarballDigest(bytes, { shasum: sha1.toUpperCase() })).toEqual({ ok: true });
    expect(checkTarballDigest(new TextEncoder().encode("other"), { integrity: sri, shasum: sha1 })).toMatchObject({ ok: false, reason: expect.stringMatching(/does not match/) });
    expect(checkTarballDigest(bytes, { shasum: "0".repeat(40) })).toMatchObject({ ok: false });
    expect(checkTarballDigest(bytes, {})).toMatchObject({ ok: false, reason: expect.stringMatching(/declares no/) });
  });

  it("merges a group's packuments: versions from all, dist-tags from the first member that has the package", () => {
    const hosted = doc("lib", ["1.0.0", "1.1.0"], "1.1.0", { time: { "1.0.0": "2020-01-01T00:00:00Z" } });
    const proxied = doc("lib", ["1.1.0", "2.0.0"], "2.0.0", { time: { "2.0.0": "2021-01-01T00:00:00Z" } });
    const merged = mergePackuments([undefined, hosted, proxied])!;
    expect(Object.keys(merged.versions!).sort()).toEqual(["1.0.0", "1.1.0", "2.0.0"]);
    expect(merged["dist-tags"]).toEqual({ latest: "1.1.0" });
    expect(merged.versions!["1.1.0"]).toBe(hosted.versions!["1.1.0"]);
    expect(merged.time).toEqual({ "1.0.0": "2020-01-01T00:00:00Z", "2.0.0": "2021-01-01T00:00:00Z" });
    expect(mergePackuments([undefined, undefined])).toBeUndefined();
  });
});
