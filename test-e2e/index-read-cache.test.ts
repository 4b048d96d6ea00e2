// The artifacts service's read cache (docs/internals/storage.md, "The read cache"): what a
// downloaded path holds is kept in memory, yet every node serves a change as it should. Two
// artifacts nodes, each behind a gateway of its own, with svc.index-cache.ttl at an hour so that
// only the evictions (a commit on the node, an event from the other) can refresh an entry.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSuite, type Suite } from "./suite.js";
import { eventually } from "./upstream.js";

describe("the read cache across two artifacts nodes", () => {
  let s: Suite;
  let other: { url: string; stop: () => Promise<void> };
  let otherGateway: { url: string; stop: () => Promise<void> };
  beforeAll(async () => {
    s = await startSuite({ env: { SVC_INDEX_CACHE_TTL: "1h" } });
    other = await s.startReplica("artifacts");
    otherGateway = await s.startGateway({ SVC_ARTIFACTS_URL: other.url });
  });
  afterAll(async () => {
    await otherGateway?.stop();
    await other?.stop();
    await s?.stop();
  });

  const put = async (path: string, body: string) => expect((await s.call("PUT", `/repository/default/${path}`, { key: s.bootstrapKey, body })).status).toBeLessThan(300);
  /** GET through a gateway: [status, body]. */
  const get = async (gateway: string, path: string) => {
    const res = await fetch(`${gateway}/repository/default/${path}`, { headers: { "service-repository-key": s.bootstrapKey } });
    return [res.status, await res.text()] as const;
  };

  it("serves a node's own overwrite and removal on that node at once", async () => {
    const path = `cache/${randomUUID()}.txt`;
    await put(path, "one");
    expect(await get(s.gatewayUrl, path)).toEqual([200, "one"]);
    expect(await get(s.gatewayUrl, path)).toEqual([200, "one"]);
    await put(path, "two");
    expect(await get(s.gatewayUrl, path)).toEqual([200, "two"]);
    expect((await s.call("DELETE", `/repository/default/${path}`, { key: s.bootstrapKey })).status).toBe(204);
    expect((await get(s.gatewayUrl, path))[0]).toBe(404);
  });

  it("serves a publish on every node at once: a path with no artifact is never cached", async () => {
    const path = `cache/${randomUUID()}.txt`;
    expect((await get(otherGateway.url, path))[0]).toBe(404);
    await put(path, "new");
    expect(await get(otherGateway.url, path)).toEqual([200, "new"]);
  });

  it("serves another node's overwrite and removal once its event arrives, though the old content is still stored", async () => {
    const path = `cache/${randomUUID()}.txt`;
    // The old content stays referenced by another path, so only the event can tell the other node.
    await put(`cache/${randomUUID()}-keeps-one.txt`, "one");
    await put(path, "one");
    expect(await get(otherGateway.url, path)).toEqual([200, "one"]);
    expect(await get(otherGateway.url, path)).toEqual([200, "one"]);

    await put(path, "two");
    await eventually("the other node to serve the overwrite", async () => ((await get(otherGateway.url, path))[1] === "two" ? true : undefined), 20_000);

    expect((await s.call("DELETE", `/repository/default/${path}`, { key: s.bootstrapKey })).status).toBe(204);
    await eventually("the other node to answer 404", async () => ((await get(otherGateway.url, path))[0] === 404 ? true : undefined), 20_000);
  });
});
