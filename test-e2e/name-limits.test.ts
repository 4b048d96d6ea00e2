import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LIMITS, type WalkRunView } from "@svc/contracts";
import { startSuite, type Suite } from "./suite.js";
import { eventually } from "./upstream.js";

/** A repository name of exactly `length` characters, unique to this run. */
const nameOf = (length: number) => {
  const head = `n${randomBytes(4).toString("hex")}-`;
  return head + "x".repeat(length - head.length);
};

describe("one limit for a name, everywhere", () => {
  let s: Suite;
  const admin = (method: string, path: string, body?: object) => s.call(method, path, { key: s.bootstrapKey, body });
  const runs = async (): Promise<WalkRunView[]> => (await (await admin("GET", "/api/walks/rebuild/runs")).json()) as WalkRunView[];
  /** Walks the store now and waits for the run to end. */
  const walkNow = async (): Promise<WalkRunView> => {
    const res = await admin("POST", "/api/walks/run");
    expect(res.status).toBe(202);
    const started = (await res.json()) as WalkRunView;
    return eventually(`run ${started.id} to end`, async () => (await runs()).find((r) => r.id === started.id && r.outcome !== "running"), 60_000);
  };

  beforeAll(async () => {
    s = await startSuite();
  });
  afterAll(async () => {
    await s?.stop();
  });

  it(`a repository name of ${LIMITS.repositoryName} characters works on every route: show, files, retention, export, uploads, a walk, removal`, async () => {
    const name = nameOf(LIMITS.repositoryName);
    const target = nameOf(LIMITS.repositoryName);
    expect(name).toHaveLength(128);
    expect((await admin("POST", "/api/repositories", { name, format: "raw" })).status).toBe(201);
    expect((await admin("POST", "/api/repositories", { name: target, format: "raw" })).status).toBe(201);
    expect((await s.call("PUT", `/repository/${name}/a/one.txt`, { key: s.bootstrapKey, body: "12345" })).status).toBe(201);
    expect((await s.call("GET", `/repository/${name}/a/one.txt`, { key: s.bootstrapKey })).status).toBe(200);

    const shown = await admin("GET", `/api/repositories/${name}`);
    expect(shown.status).toBe(200);
    expect(await shown.json()).toMatchObject({ name, artifacts: 1, bytes: 5 });
    const files = await admin("GET", `/api/repositories/${name}/files`);
    expect(files.status).toBe(200);
    expect(((await files.json()) as { path: string }[]).map((f) => f.path)).toEqual(["a/one.txt"]);

    const policy = { path: "a", keepVersions: 5 };
    const set = await admin("PUT", `/api/repositories/${name}/retention`, policy);
    expect(set.status, await set.clone().text()).toBe(200);
    expect((await admin("GET", `/api/repositories/${name}/retention`)).status).toBe(200);
    expect((await admin("DELETE", `/api/repositories/${name}/retention`)).status).toBe(204);

    const exported = await admin("POST", `/api/repositories/${name}/export`, { target });
    expect(exported.status, await exported.clone().text()).toBe(202);
    const location = exported.headers.get("location")!;
    await eventually("the export to end", async () => {
      const r = (await (await admin("GET", location)).json()) as { state: string };
      return r.state === "running" ? undefined : r;
    });
    expect((await admin("GET", `/api/repositories/${name}/exports`)).status).toBe(200);
    expect((await s.call("GET", `/repository/${target}/a/one.txt`, { key: s.bootstrapKey })).status).toBe(200);

    // A walk goes over it (and every other repository) and succeeds.
    const run = await walkNow();
    expect(run.outcome).toBe("succeeded");
    expect(run.problems).toEqual({ count: 0, first: [] });

    expect((await admin("DELETE", `/api/repositories/${name}?force=true`)).status).toBe(204);
    expect((await admin("GET", `/api/repositories/${name}`)).status).toBe(404);
    expect((await admin("DELETE", `/api/repositories/${target}?force=true`)).status).toBe(204);
  });

  it(`a name of ${LIMITS.repositoryName + 1} characters is refused at creation with a 400 naming the limit, and on each route the same way`, async () => {
    const name = nameOf(LIMITS.repositoryName + 1);
    const created = await admin("POST", "/api/repositories", { name, format: "raw" });
    expect(created.status).toBe(400);
    expect(created.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(((await created.json()) as { detail: string }).detail).toMatch(/128/);
    for (const path of [`/api/repositories/${name}`, `/api/repositories/${name}/files`, `/api/repositories/${name}/retention`]) {
      const r = await admin("GET", path);
      expect(r.status, path).toBe(400);
      expect(((await r.json()) as { detail: string }).detail, path).toMatch(/128/);
    }
  });

  it("a walk that meets an entry it cannot file records it on the run and walks the rest", async () => {
    const dir = `long-${randomBytes(4).toString("hex")}`;
    const repo = join(s.storeRoot, "repositories", "default");
    // Put behind the service's back: a path over the artifact path limit (each folder name a file system takes)...
    const deep = [dir, ...Array.from({ length: 5 }, (_, i) => `${i}`.repeat(250))];
    mkdirSync(join(repo, ...deep), { recursive: true });
    writeFileSync(join(repo, ...deep, "too-long.txt"), "far down");
    const badPath = [...deep, "too-long.txt"].join("/");
    expect(badPath.length).toBeGreaterThan(LIMITS.artifactPath);
    // ...and a file beside it the walk can file.
    writeFileSync(join(repo, dir, "loose.txt"), "loose content");
    try {
      const run = await walkNow();
      expect(run.outcome).toBe("succeeded");
      expect(run.counts.backfill).toMatchObject({ filled: 1 });
      expect(run.problems.count).toBe(1);
      expect(run.problems.first).toEqual([{ repository: "default", path: badPath, detail: expect.stringMatching(/^backfill: .*400/) }]);
      expect((await s.call("GET", `/repository/default/${dir}/loose.txt`, { key: s.bootstrapKey })).status).toBe(200);
      // The record is what the walk listing shows too.
      const walk = (await (await admin("GET", "/api/walks/rebuild")).json()) as { lastRun: WalkRunView };
      expect(walk.lastRun.problems.count).toBe(1);
    } finally {
      rmSync(join(repo, dir), { recursive: true, force: true });
    }
    expect(existsSync(join(repo, dir))).toBe(false);
  });
});
