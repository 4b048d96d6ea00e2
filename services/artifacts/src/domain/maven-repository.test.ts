import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { MavenStore } from "../store/maven-store.js";
import { mavenRepositoryFactory } from "./maven-repository.js";

const actor = { kind: "key" as const, id: "k1" };
const address = (path: string) => ({ repository: "maven", segments: path.split("/"), path });
const untouched = new Proxy({}, { get: () => () => Promise.reject(new Error("read-only mode reached the store")) });

describe("a maven repository in read-only mode", () => {
  const maven = mavenRepositoryFactory({
    store: untouched as MavenStore,
    artifacts: untouched as never,
    metadata: untouched as never,
    files: untouched as never,
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
