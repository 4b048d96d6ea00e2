import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { digestCheck, type DeclaredDigests } from "../../domain/upload-checks.js";
import { mergePackuments, rewriteTarballUrls, sriDigests, type UpstreamPackument } from "./npm-proxy.js";

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

  it("checks a tarball against the strongest digest of its integrity, else its shasum; refuses one that does not match", () => {
    const bytes = Buffer.from("tarball bytes");
    const b64 = (algorithm: string, b: Buffer) => createHash(algorithm).update(b).digest("base64");
    const hex = (algorithm: string, b: Buffer) => createHash(algorithm).update(b).digest("hex");
    const sri = `sha512-${b64("sha512", bytes)}`;
    const check = (digests: DeclaredDigests | undefined, body: Buffer) => {
      const c = digestCheck(digests!);
      for (const t of c.through) t.write(body);
      return () => c.verify(hex("sha256", body));
    };
    expect(sriDigests(`sha1-zzz sha256-${b64("sha256", bytes)} ${sri}`, undefined)).toEqual({ sha512: [{ hex: hex("sha512", bytes), header: "integrity" }] });
    expect(check(sriDigests(sri, undefined), bytes)).not.toThrow();
    expect(check(sriDigests(sri, undefined), Buffer.from("other"))).toThrow(/integrity does not match/);
    expect(check(sriDigests(undefined, hex("sha1", bytes).toUpperCase()), bytes)).not.toThrow();
    expect(check(sriDigests(undefined, "0".repeat(40)), bytes)).toThrow(/shasum does not match/);
    expect(sriDigests(undefined, undefined)).toBeUndefined();
    expect(sriDigests("md5-abc", "not hex")).toBeUndefined();
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
