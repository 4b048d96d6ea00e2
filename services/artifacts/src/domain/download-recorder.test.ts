import { describe, expect, it } from "vitest";
import type { DownloadCount } from "../store/metadata-store.js";
import { downloadRecorderFactory } from "./download-recorder.js";

const CI = "key:ci";
const DEV = "person:dev";

describe("download recorder", () => {
  it("writes many downloads as one batch, one entry per path and principal, keeping the first and latest times", async () => {
    const batches: DownloadCount[][] = [];
    const r = downloadRecorderFactory({ store: { recordDownloads: async (b) => void batches.push(b) }, log: { warn: () => {} } });
    r.record("libs", "a.jar", CI, new Date(1000));
    r.record("libs", "a.jar", CI, new Date(3000));
    r.record("libs", "a.jar", CI, new Date(2000));
    r.record("libs", "a.jar", DEV, new Date(2500));
    r.record("libs", "b.jar", CI, new Date(1000));
    await r.flush();
    expect(batches).toHaveLength(1);
    expect(batches[0]).toEqual([
      { repository: "libs", path: "a.jar", principal: CI, first: new Date(1000), at: new Date(3000), count: 3 },
      { repository: "libs", path: "a.jar", principal: DEV, first: new Date(2500), at: new Date(2500), count: 1 },
      { repository: "libs", path: "b.jar", principal: CI, first: new Date(1000), at: new Date(1000), count: 1 },
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
    r.record("libs", "a.jar", CI, new Date(1000));
    await r.flush();
    fail = false;
    r.record("libs", "a.jar", CI, new Date(2000));
    await r.flush();
    expect(batches).toEqual([[{ repository: "libs", path: "a.jar", principal: CI, first: new Date(1000), at: new Date(2000), count: 2 }]]);
  });

  it("holds a bounded number of paths", async () => {
    const r = downloadRecorderFactory({ store: { recordDownloads: async () => {} }, log: { warn: () => {} }, maxPending: 2 });
    r.record("libs", "a", CI, new Date());
    r.record("libs", "b", CI, new Date());
    r.record("libs", "c", CI, new Date());
    expect(r.pending()).toBe(2);
  });
});
