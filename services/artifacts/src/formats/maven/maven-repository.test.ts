import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { MavenStore } from "./maven-store.js";
import { mavenFileIndexing, mavenRepositoryFactory } from "./maven-repository.js";

const actor = { kind: "key" as const, id: "k1" };
const address = (path: string) => ({ repository: "maven", segments: path.split("/"), path });
const untouched = new Proxy({}, { get: () => () => Promise.reject(new Error("read-only mode reached the store")) });

describe("a maven repository in read-only mode", () => {
  const maven = mavenRepositoryFactory({
    store: untouched as MavenStore,
    artifacts: untouched as never,
    metadata: untouched as never,
    blobs: untouched as never,
    readOnly: true,
  });
  const readOnly = { code: "forbidden", message: expect.stringMatching(/read-only/) };

  it("refuses every write with 403 before anything is read or stored", async () => {
    const jar = address("org/example/lib/1.0/lib-1.0.jar");
    await expect(maven.deploy(jar, Readable.from(["x"]), null, actor)).rejects.toMatchObject(readOnly);
    await expect(maven.checksum("maven", jar.segments, "sha1", "0".repeat(40))).rejects.toMatchObject(readOnly);
    await expect(maven.metadata(address("org/example/lib/maven-metadata.xml"), ["org", "example", "lib"], "<metadata/>", actor)).rejects.toMatchObject(readOnly);
    await expect(maven.remove(jar, actor)).rejects.toMatchObject(readOnly);
  });
});

describe("indexing a file the walker found (a deploy that crashed before its commit)", () => {
  const calls: unknown[][] = [];
  const store = {
    lockArtifact: async (...args: unknown[]) => void calls.push(["lock", ...args.slice(1)]),
    recordVersion: async (...args: unknown[]) => void calls.push(["version", ...args.slice(1)]),
    recordSnapshot: async (...args: unknown[]) => void calls.push(["snapshot", ...args.slice(1)]),
  };
  const index = mavenFileIndexing({ store });
  const at = new Date("2024-01-02T12:00:00Z");
  const k = { repository: "maven", groupId: "org.example", artifactId: "lib" };

  it("records the version (and a timestamped file's snapshot build) under the artifact's lock, dated by the file", async () => {
    calls.length = 0;
    await index(undefined as never, address("org/example/lib/1.0/lib-1.0.jar"), at);
    expect(calls).toEqual([["lock", k], ["version", k, "1.0", at]]);
    calls.length = 0;
    await index(undefined as never, address("org/example/lib/2.0-SNAPSHOT/lib-2.0-20240102.120000-3-sources.jar"), at);
    expect(calls).toEqual([
      ["lock", k],
      ["version", k, "2.0-SNAPSHOT", at],
      ["snapshot", k, "2.0-SNAPSHOT", { classifier: "sources", extension: "jar", value: "2.0-20240102.120000-3", timestamp: "20240102.120000", buildNumber: 3 }, at],
    ]);
  });

  it("records nothing for checksum files, maven-metadata.xml documents or paths outside the layout", async () => {
    calls.length = 0;
    for (const path of ["org/example/lib/1.0/lib-1.0.jar.sha1", "org/example/lib/1.0/lib-1.0.jar.md5", "org/example/lib/maven-metadata.xml", "org/example/lib/2.0-SNAPSHOT/maven-metadata.xml", "org/example/maven-metadata.xml", "org/example/lib/1.0/other-1.0.jar", "readme.txt"]) {
      await index(undefined as never, address(path), at);
    }
    expect(calls).toEqual([]);
  });
});
