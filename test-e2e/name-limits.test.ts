import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LIMITS, type WalkRunView } from "@svc/contracts";
import { freshName, startSuite, type Suite } from "./suite.js";
import { eventually } from "./upstream.js";

/** A repository name of exactly `length` characters, unique to this run. */
const nameOf = (length: number) => {
  const head = `n${randomBytes(4).toString("hex")}-`;
  return head + "x".repeat(length - head.length);
};

describe("one limit for a name, everywhere", () => {
  let s: Suite;
  let db: pg.Client;
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
    db = new pg.Client({ connectionString: s.databaseUrl });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
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
    const tag = randomBytes(4).toString("hex");
    const repo = freshName("mvn");
    await s.createRepository(repo, "maven");
    // A Maven file whose format row is missing, for backfill to fill...
    const lib = `com/acme/lib-${tag}`;
    const jar = `${lib}/1.0/lib-${tag}-1.0.jar`;
    expect((await s.call("PUT", `/repository/${repo}/${jar}`, { key: s.bootstrapKey, body: randomBytes(32) })).status).toBe(201);
    await db.query(`delete from artifacts.maven_versions where repository = $1`, [repo]);
    // ...and, in the same index page, a row over the artifact path limit, written behind the service's back (its content the jar's).
    const badPath = [`long-${tag}`, ...Array.from({ length: 5 }, (_, i) => `${i}`.repeat(250)), "too-long.txt"].join("/");
    expect(badPath.length).toBeGreaterThan(LIMITS.artifactPath);
    await db.query(`create temp table planted as select * from artifacts.artifacts where repository = $1 and path = $2`, [repo, jar]);
    await db.query(`update planted set path = $1`, [badPath]);
    await db.query(`insert into artifacts.artifacts select * from planted`);
    await db.query(`drop table planted`);
    try {
      const run = await walkNow();
      expect(run.outcome).toBe("succeeded");
      expect(run.counts.backfill).toMatchObject({ filled: 1 });
      expect(run.problems.count).toBe(1);
      expect(run.problems.first).toEqual([{ repository: repo, path: badPath, detail: expect.stringMatching(/^backfill: .*400/) }]);
      const versions = await s.call("GET", `/repository/${repo}/${lib}/maven-metadata.xml`, { key: s.bootstrapKey });
      expect(await versions.text()).toContain("<version>1.0</version>");
      // The record is what the walk listing shows too.
      const walk = (await (await admin("GET", "/api/walks/rebuild")).json()) as { lastRun: WalkRunView };
      expect(walk.lastRun.problems.count).toBe(1);
    } finally {
      await db.query(`delete from artifacts.artifacts where repository = $1 and path = $2`, [repo, badPath]);
    }
    expect((await db.query(`select 1 from artifacts.artifacts where repository = $1 and path = $2`, [repo, badPath])).rowCount).toBe(0);
  });
});
