import { describe, expect, it } from "vitest";
import { artifactMetadata, snapshotMetadata } from "./maven-metadata.js";

const at = (s: string) => new Date(`2024-01-0${s}T10:00:00Z`);

describe("maven-metadata.xml written by the server", () => {
  it("lists every version in deploy order with the latest and the latest release", () => {
    const xml = artifactMetadata("org.example", "lib", [
      { version: "2.0-SNAPSHOT", deployed: at("3"), updated: at("4") },
      { version: "1.0", deployed: at("1"), updated: at("1") },
      { version: "1.1", deployed: at("2"), updated: at("2") },
    ]);
    expect(xml).toContain("<latest>2.0-SNAPSHOT</latest>");
    expect(xml).toContain("<release>1.1</release>");
    expect(xml.indexOf("<version>1.0</version>")).toBeLessThan(xml.indexOf("<version>1.1</version>"));
    expect(xml).toContain("<lastUpdated>20240104100000</lastUpdated>");
  });

  it("names the latest build of a snapshot and, per classifier and extension, its newest file", () => {
    const row = (value: string, buildNumber: number, classifier = "", extension = "jar") => ({ classifier, extension, value, timestamp: value.slice(4, 19), buildNumber, updated: at(String(buildNumber)) });
    const xml = snapshotMetadata("org.example", "lib", "1.0-SNAPSHOT", [
      row("1.0-20240101.100000-1", 1),
      row("1.0-20240101.100000-1", 1, "", "pom"),
      row("1.0-20240102.100000-2", 2),
      row("1.0-20240102.100000-2", 2, "", "pom"),
      row("1.0-20240101.100000-1", 1, "sources"),
    ]);
    expect(xml).toContain("<timestamp>20240102.100000</timestamp>");
    expect(xml).toContain("<buildNumber>2</buildNumber>");
    expect(xml).toMatch(/<extension>jar<\/extension>\s*<value>1\.0-20240102\.100000-2<\/value>/);
    expect(xml).toMatch(/<classifier>sources<\/classifier>\s*<extension>jar<\/extension>\s*<value>1\.0-20240101\.100000-1<\/value>/);
    expect(xml.match(/<snapshotVersion>/g)).toHaveLength(3);
  });
});
