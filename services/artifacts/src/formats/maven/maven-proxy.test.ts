import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { checkSha1, mergeArtifactMetadata, parseArtifactMetadata } from "./maven-proxy.js";

const xml = (versions: string[], lastUpdated: string) =>
  `<?xml version="1.0"?><metadata><groupId>com.acme</groupId><artifactId>lib</artifactId><versioning><latest>${versions.at(-1)}</latest>` +
  `<versions>${versions.map((v) => `<version>${v}</version>`).join("")}</versions><lastUpdated>${lastUpdated}</lastUpdated></versioning></metadata>`;

describe("maven proxy", () => {
  it("reads an upstream maven-metadata.xml and merges a group's, in member order", () => {
    const a = parseArtifactMetadata(xml(["1.0", "1.1"], "20240101000000"));
    expect(a).toEqual({ versions: ["1.0", "1.1"], latest: "1.1", lastUpdated: "20240101000000" });
    const b = parseArtifactMetadata(xml(["1.1", "2.0-SNAPSHOT", "1.2"], "20250101000000"));
    expect(mergeArtifactMetadata([a, b])).toEqual({ versions: ["1.0", "1.1", "2.0-SNAPSHOT", "1.2"], latest: "1.2", release: "1.2", lastUpdated: "20250101000000" });
    expect(mergeArtifactMetadata([])).toBeUndefined();
  });

  it("checks a file against the upstream .sha1, with or without a file name after it", () => {
    const bytes = new TextEncoder().encode("jar bytes");
    const sha1 = createHash("sha1").update(bytes).digest("hex");
    expect(checkSha1(bytes, `${sha1}\n`)).toEqual({ ok: true });
    expect(checkSha1(bytes, `${sha1.toUpperCase()}  lib-1.0.jar`)).toEqual({ ok: true });
    expect(checkSha1(bytes, "0".repeat(40))).toMatchObject({ ok: false, reason: expect.stringMatching(/does not match/) });
    expect(checkSha1(bytes, "<html>not found</html>")).toMatchObject({ ok: false, reason: expect.stringMatching(/no sha1/) });
  });
});
