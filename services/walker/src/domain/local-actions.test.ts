import { createHash } from "node:crypto";
import { existsSync, linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { storeLayout } from "@svc/kit";
import { localActionsFactory } from "./local-actions.js";

const HOUR = 3_600_000;
const sha = (s: string) => createHash("sha256").update(s).digest("hex");

describe("removing a blob nothing links to", () => {
  let root: string;
  let layout: ReturnType<typeof storeLayout>;
  const blob = (content: string, ageMs: number) => {
    const p = layout.blobOf(sha(content));
    mkdirSync(join(p, ".."), { recursive: true });
    writeFileSync(p, content);
    const t = new Date(Date.now() - ageMs);
    utimesSync(p, t, t);
    return p;
  };
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), "local-actions-"));
    layout = storeLayout(root);
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it("removes an old blob with one link and answers its size", async () => {
    const p = blob("orphan", 2 * HOUR);
    expect(await localActionsFactory(root).removeBlob(sha("orphan"), HOUR)).toBe(6);
    expect(existsSync(p)).toBe(false);
  });

  it("keeps a blob an artifact links to, a young one, a symbolic link and a name that is no digest", async () => {
    const linked = blob("linked", 2 * HOUR);
    mkdirSync(layout.repositoryDir("libs"), { recursive: true });
    linkSync(linked, layout.pathOf("libs", ["a.txt"]));
    const young = blob("young", 60_000);
    const target = blob("target", 2 * HOUR);
    const link = layout.blobOf(sha("symlink"));
    mkdirSync(join(link, ".."), { recursive: true });
    symlinkSync(target, link);
    const actions = localActionsFactory(root, () => Date.now());
    expect(await actions.removeBlob(sha("linked"), HOUR)).toBeUndefined();
    expect(await actions.removeBlob(sha("young"), HOUR)).toBeUndefined();
    expect(await actions.removeBlob(sha("symlink"), HOUR)).toBeUndefined();
    expect(await actions.removeBlob("../../tmp/x", HOUR)).toBeUndefined();
    expect(await actions.removeBlob(sha("absent"), HOUR)).toBeUndefined();
    for (const p of [linked, young, link, target]) expect(existsSync(p)).toBe(true);
  });
});
