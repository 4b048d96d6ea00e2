import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { checkSha1, declaredSha1, filterArtifactMetadata, mergeArtifactMetadata, parseArtifactMetadata } from "./maven-proxy.js";

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

  it("hides versions from an upstream maven-metadata.xml, repairing latest and release, the rest kept as it was", () => {
    const upstream = [
      '<?xml version="1.0" encoding="UTF-8"?>',
      "<metadata>",
      "  <groupId>com.acme</groupId>",
      "  <artifactId>lib</artifactId>",
      "  <versioning>",
      "    <latest>2.0-SNAPSHOT</latest>",
      "    <release>1.2</release>",
      "    <versions>",
      "      <version>1.0</version>",
      "      <version>1.1</version>",
      "      <version>1.2</version>",
      "      <version>2.0-SNAPSHOT</version>",
      "    </versions>",
      "    <lastUpdated>20250101000000</lastUpdated>",
      "  </versioning>",
      "</metadata>",
      "",
    ].join("\n");
    expect(filterArtifactMetadata(upstream, new Set())).toBe(upstream);
    // A hidden version that is neither latest nor release: only its line goes.
    expect(filterArtifactMetadata(upstream, new Set(["1.1"]))).toBe(upstream.replace("      <version>1.1</version>\n", ""));
    const repaired = filterArtifactMetadata(upstream, new Set(["1.2", "2.0-SNAPSHOT"]));
    expect(parseArtifactMetadata(repaired)).toEqual({ versions: ["1.0", "1.1"], latest: "1.1", release: "1.1", lastUpdated: "20250101000000" });
    expect(repaired).toContain("  <groupId>com.acme</groupId>\n");
    // Every release hidden: no <release>, <latest> the snapshot left.
    const snapshotOnly = filterArtifactMetadata(upstream, new Set(["1.0", "1.1", "1.2"]));
    expect(parseArtifactMetadata(snapshotOnly)).toEqual({ versions: ["2.0-SNAPSHOT"], latest: "2.0-SNAPSHOT", lastUpdated: "20250101000000" });
    expect(snapshotOnly).not.toContain("<release>");
    // On one line, as some repositories write it; escaped versions are compared unescaped.
    const oneLine = xml(["1.0", "1.0&amp;x"], "20240101000000");
    expect(parseArtifactMetadata(filterArtifactMetadata(oneLine, new Set(["1.0&x"])))).toEqual({ versions: ["1.0"], latest: "1.0", lastUpdated: "20240101000000" });
  });

  it("reads the digest an upstream .sha1 declares", () => {
    expect(declaredSha1(`${"A".repeat(40)}  lib-1.0.jar\n`)).toBe("a".repeat(40));
    expect(declaredSha1("<html>404</html>")).toBeUndefined();
  });
});
