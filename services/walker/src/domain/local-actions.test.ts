import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { localActionsFactory } from "./local-actions.js";
import { memoryBlobStore } from "./test-blob-store.js";

const HOUR = 3_600_000;
const sha = (s: string) => createHash("sha256").update(s).digest("hex");

describe("what the walker does with the blob store itself", () => {
  it("reads a blob's digest from its bytes as they are now, and nothing for a blob that is gone", async () => {
    const m = memoryBlobStore();
    m.plant("intact");
    // Bytes that are not what their name says: a disk error, an edit behind the server's back.
    m.plant("flipped bits", { as: sha("original") });
    const local = localActionsFactory(m.store);
    expect(await local.digestOf(sha("intact"))).toBe(sha("intact"));
    expect(await local.digestOf(sha("original"))).toBe(sha("flipped bits"));
    expect(await local.digestOf(sha("absent"))).toBeUndefined();
  });

  it("removes a staged leftover only once untouched for the age asked, answering the bytes freed", async () => {
    const m = memoryBlobStore();
    m.stageLeftover("abandoned", "half an upload", 2 * HOUR);
    m.stageLeftover("in-progress", "still coming", 60_000);
    const local = localActionsFactory(m.store);
    expect(await local.deleteStaged("abandoned", HOUR)).toBe(14);
    expect(await local.deleteStaged("in-progress", HOUR)).toBeUndefined();
    expect(await local.deleteStaged("never-there", HOUR)).toBeUndefined();
    expect(m.hasStaged("abandoned")).toBe(false);
    expect(m.hasStaged("in-progress")).toBe(true);
  });
});
