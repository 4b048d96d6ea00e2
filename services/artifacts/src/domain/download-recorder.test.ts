import { describe, expect, it } from "vitest";
import type { DownloadCount } from "../store/metadata-store.js";
import { downloadRecorderFactory } from "./download-recorder.js";

describe("download recorder", () => {
  it("writes many downloads as one batch per path, keeping the latest time", async () => {
    const batches: DownloadCount[][] = [];
    const r = downloadRecorderFactory({ store: { recordDownloads: async (b) => void batches.push(b) }, log: { warn: () => {} } });
    r.record("libs", "a.jar", new Date(1000));
    r.record("libs", "a.jar", new Date(3000));
    r.record("libs", "a.jar", new Date(2000));
    r.record("libs", "b.jar", new Date(1000));
    await r.flush();
    expect(batches).toHaveLength(1);
    expect(batches[0]).toEqual([
      { repository: "libs", path: "a.jar", at: new Date(3000), count: 3 },
      { repository: "libs", path: "b.jar", at: new Date(1000), count: 1 },
    ]);
    await r.flush();
    expect(batches).toHaveLength(1);
  });

  it("keeps a failed batch for the next one", async () => {
    let fail = true;
    const batches: DownloadCount[][] = [];
    const r = downloadRecorderFactory({
      store: { recordDownloads: async (b) => { if (fail) throw new Error("db down"); batches.push(b); } },
      log: { warn: () => {} },
    });
    r.record("libs", "a.jar", new Date(1000));
    await r.flush();
    fail = false;
    r.record("libs", "a.jar", new Date(2000));
    await r.flush();
    expect(batches).toEqual([[{ repository: "libs", path: "a.jar", at: new Date(2000), count: 2 }]]);
  });

  it("holds a bounded number of paths", async () => {
    const r = downloadRecorderFactory({ store: { recordDownloads: async () => {} }, log: { warn: () => {} }, maxPending: 2 });
    r.record("libs", "a", new Date());
    r.record("libs", "b", new Date());
    r.record("libs", "c", new Date());
    expect(r.pending()).toBe(2);
  });
});
