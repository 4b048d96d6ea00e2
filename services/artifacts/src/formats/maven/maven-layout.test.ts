import { describe, expect, it } from "vitest";
import { mavenCoordinates, parseMavenPath } from "./maven-layout.js";

const parse = (path: string) => parseMavenPath(path.split("/"));

describe("the Maven 2 layout", () => {
  it("reads a release file, a classifier and a multi-dot extension", () => {
    expect(parse("org/example/lib/1.0/lib-1.0.jar")).toMatchObject({ kind: "file", groupId: "org.example", artifactId: "lib", version: "1.0", classifier: "", extension: "jar" });
    expect(parse("org/example/lib/1.0/lib-1.0-sources.jar")).toMatchObject({ kind: "file", classifier: "sources", extension: "jar" });
    expect(parse("org/example/lib/1.0/lib-1.0-bin.tar.gz")).toMatchObject({ kind: "file", classifier: "bin", extension: "tar.gz" });
    expect(parse("org/example/lib/1.0/lib-1.0.pom.asc")).toMatchObject({ kind: "file", classifier: "", extension: "pom.asc" });
  });

  it("reads a unique snapshot's timestamp and build number", () => {
    expect(parse("org/example/lib/1.0-SNAPSHOT/lib-1.0-20240102.030405-12-tests.jar")).toMatchObject({
      kind: "file",
      version: "1.0-SNAPSHOT",
      classifier: "tests",
      extension: "jar",
      snapshot: { value: "1.0-20240102.030405-12", timestamp: "20240102.030405", buildNumber: 12 },
    });
  });

  it("tells checksums and metadata from files", () => {
    expect(parse("org/example/lib/1.0/lib-1.0.jar.sha1")).toEqual({ kind: "checksum", algorithm: "sha1", of: "org/example/lib/1.0/lib-1.0.jar".split("/") });
    expect(parse("org/example/lib/maven-metadata.xml.sha512")).toMatchObject({ kind: "checksum", algorithm: "sha512" });
    expect(parse("org/example/lib/1.0-SNAPSHOT/maven-metadata.xml")).toEqual({ kind: "metadata", dir: ["org", "example", "lib", "1.0-SNAPSHOT"] });
  });

  it("refuses what the layout does not name", () => {
    expect(parse("lib/1.0/lib-1.0.jar").kind).toBe("other");
    expect(parse("org/example/lib/1.0/other-1.0.jar").kind).toBe("other");
    expect(parse("org/example/lib/1.0/lib-2.0.jar").kind).toBe("other");
    expect(parse("org/example/lib/1.0/lib-1.0").kind).toBe("other");
  });

  it("gives an artifact event groupId:artifactId, the version folder and the file", () => {
    expect(mavenCoordinates("com/acme/app/2.1/app-2.1.jar")).toEqual({ format: "maven", name: "com.acme:app", version: "2.1", file: "app-2.1.jar" });
    expect(mavenCoordinates("com/acme/app/maven-metadata.xml")).toBeUndefined();
  });
});
