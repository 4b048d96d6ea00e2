import { createHash, randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WalkRunView, WalkView } from "@svc/contracts";
import { keyId } from "@svc/keys";
import { identityHeaders } from "@svc/kit";
import { linkStagedAsBlob, storeObjects, type StoreObjects } from "./store-objects.js";
import { freshName, startSuite, type Suite } from "./suite.js";
import { adminCaller, collectArtifactEvents, eventually, systemCall } from "./upstream.js";

type Run = WalkRunView;
type Walk = WalkView;
type Meta = { path: string; size: number; sha256: string; lastDownloaded: string | null };

const sha = (s: string) => createHash("sha256").update(s).digest("hex");
const HOUR = 3_600_000;
/**
 * svc.storage.reclaim-grace in the S3 pass. An object store dates an object itself, to when it
 * was written, so a test cannot make a blob two hours old there: the suite runs with a grace of
 * seconds and the test waits it out (the filesystem keeps the default hour and backdates files).
 */
const S3_RECLAIM_GRACE_MS = 15_000;

describe("walks", () => {
  let s: Suite;
  let walks: Awaited<ReturnType<typeof adminCaller>>["call"];
  let repos: Awaited<ReturnType<typeof adminCaller>>["call"];
  let db: pg.Client;
  /** The suite's blob store behind the server's back (its folder, or its bucket in the S3 pass). */
  let store: StoreObjects;
  const put = (path: string, body: string) => s.call("PUT", `/repository/default/${path}`, { key: s.bootstrapKey, body });
  const get = (path: string) => s.call("GET", `/repository/default/${path}`, { key: s.bootstrapKey });
  const metadata = async (): Promise<Map<string, Meta>> => {
    const res = await systemCall(s, "artifacts", "GET", "/internal/repositories/default/artifacts?limit=5000");
    expect(res.status).toBe(200);
    return new Map(((await res.json()) as Meta[]).map((m) => [m.path, m]));
  };
  const runs = async (walk: string): Promise<Run[]> => {
    const res = await walks("GET", `/api/walks/${walk}/runs`);
    expect(res.status).toBe(200);
    return (await res.json()) as Run[];
  };
  /** Waits (bounded) until a run has ended, and returns its record. */
  const ended = (walk: string, id: string, timeoutMs = 45_000) =>
    eventually(`run ${id} of ${walk} to end`, async () => (await runs(walk)).find((r) => r.id === id && r.outcome !== "running"), timeoutMs);

  beforeAll(async () => {
    s = await startSuite(process.env.SVC_TEST_STORAGE === "s3" ? { env: { SVC_STORAGE_RECLAIM_GRACE: `${S3_RECLAIM_GRACE_MS / 1000}s` } } : {});
    store = storeObjects(s);
    walks = (await adminCaller(s, "/api/walks", "walker")).call;
    repos = (await adminCaller(s, "/api/repositories", "artifacts")).call;
    db = new pg.Client({ connectionString: s.databaseUrl });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    store?.close();
    await s?.stop();
  });

  it("a new deployment has the retention walk daily and the rebuild walk on Sundays, 03:00 UTC", async () => {
    const res = await walks("GET", "/api/walks");
    expect(res.status).toBe(200);
    const list = (await res.json()) as Walk[];
    expect(list.map(({ name, schedule, enabled, jobs }) => ({ name, schedule, enabled, jobs }))).toEqual([
      { name: "rebuild", schedule: "0 0 3 * * 0", enabled: true, jobs: ["reclaim", "repair", "backfill"] },
      { name: "retention", schedule: "0 0 3 * * *", enabled: true, jobs: ["retention"] },
    ]);
    const rebuildNext = new Date(list[0]!.nextRun!);
    expect([rebuildNext.getUTCDay(), rebuildNext.getUTCHours(), rebuildNext.getUTCMinutes(), rebuildNext.getUTCSeconds()]).toEqual([0, 3, 0, 0]);
    expect(new Date(list[1]!.nextRun!).getUTCHours()).toBe(3);
  });

  it("refuses bad input with a 400 naming it, and an unknown walk with a 404", async () => {
    const bad = await walks("POST", "/api/walks", { name: "nightly", schedule: "0 3 * * *", jobs: ["reclaim"] });
    expect(bad.status).toBe(400);
    const p = (await bad.json()) as { field: string; detail: string };
    expect(p.field).toBe("schedule");
    expect(p.detail).toContain('"0 3 * * *"');
    const range = await walks("POST", "/api/walks", { name: "nightly", schedule: "0 61 3 * * *", jobs: ["reclaim"] });
    expect(range.status).toBe(400);
    expect(((await range.json()) as { detail: string }).detail).toContain("0 61 3 * * *");
    // Steps the cron parser would take silently (never, or at the range's start only) are refused, not rewritten.
    for (const schedule of ["*/0 * * * * *", "*/999999 * * * * *", "0 0 0 * */13 *"]) {
      const step = await walks("POST", "/api/walks", { name: "nightly", schedule, jobs: ["reclaim"] });
      expect(step.status, schedule).toBe(400);
      expect(await step.json()).toMatchObject({ field: "schedule", detail: expect.stringContaining(`"${schedule}" is not a valid schedule: the step`) });
    }
    expect((await walks("PUT", "/api/walks/rebuild", { schedule: "0 0 3 * * */7" })).status).toBe(400);
    const job = await walks("POST", "/api/walks", { name: "nightly", schedule: "0 0 3 * * *", jobs: ["reclaim", "defrag"] });
    expect(job.status).toBe(400);
    expect(await job.json()).toMatchObject({ field: "jobs", detail: expect.stringContaining('"defrag"') });
    expect((await walks("POST", "/api/walks", { name: "nightly", schedule: "0 0 3 * * *", jobs: ["reclaim"], colour: "red" })).status).toBe(400);
    expect((await walks("POST", "/api/walks", { name: "run", schedule: "0 0 3 * * *", jobs: ["reclaim"] })).status).toBe(400);
    expect((await walks("PUT", "/api/walks/rebuild", { schedule: "every sunday" })).status).toBe(400);
    expect((await walks("PUT", "/api/walks/rebuild", { jobs: [] })).status).toBe(400);
    expect((await walks("PUT", "/api/walks/rebuild", {})).status).toBe(400);
    expect((await walks("PUT", "/api/walks/nope", { enabled: false })).status).toBe(404);
    expect((await walks("DELETE", "/api/walks/nope")).status).toBe(404);
    expect((await walks("GET", "/api/walks/nope")).status).toBe(404);
    expect((await walks("GET", "/api/walks/nope/runs")).status).toBe(404);
    expect((await walks("POST", "/api/walks/nope/run")).status).toBe(404);
    for (const q of ["limit=0", "limit=501", "limit=x", "colour=red"]) expect((await walks("GET", `/api/walks?${q}`)).status, q).toBe(400);
    // Nothing of that changed anything.
    expect(((await (await walks("GET", "/api/walks")).json()) as Walk[]).map((w) => w.name)).toEqual(["rebuild", "retention"]);
  });

  it("adds, pages, edits and removes walks", async () => {
    const added = await walks("POST", "/api/walks", { name: "nightly", schedule: "0 30 1 * * *", jobs: ["repair", "repair"], enabled: false });
    expect(added.status).toBe(201);
    expect(await added.json()).toMatchObject({ name: "nightly", schedule: "0 30 1 * * *", enabled: false, jobs: ["repair"], nextRun: null, lastRun: null });
    expect((await walks("POST", "/api/walks", { name: "nightly", schedule: "0 30 1 * * *", jobs: ["repair"] })).status).toBe(409);

    const page1 = await walks("GET", "/api/walks?limit=2");
    expect(((await page1.json()) as Walk[]).map((w) => w.name)).toEqual(["nightly", "rebuild"]);
    const cursor = page1.headers.get("x-next-cursor");
    expect(cursor).toBe("rebuild");
    const page2 = await walks("GET", `/api/walks?limit=2&after=${cursor}`);
    expect(((await page2.json()) as Walk[]).map((w) => w.name)).toEqual(["retention"]);
    expect(page2.headers.get("x-next-cursor")).toBeNull();

    const edited = await walks("PUT", "/api/walks/nightly", { schedule: "0 0 2 * * 1-5", enabled: true, jobs: ["backfill", "reclaim"] });
    expect(edited.status).toBe(200);
    const w = (await edited.json()) as Walk;
    expect(w).toMatchObject({ schedule: "0 0 2 * * 1-5", enabled: true, jobs: ["backfill", "reclaim"] });
    expect(new Date(w.nextRun!).getUTCHours()).toBe(2);
    expect((await walks("DELETE", "/api/walks/nightly")).status).toBe(204);
    expect((await walks("GET", "/api/walks/nightly")).status).toBe(404);
  });

  it("walking the store now backfills, repairs and reclaims, and leaves a run record", async () => {
    const tag = randomBytes(4).toString("hex");
    const dir = `rebuild-${tag}`;
    // A path whose blob was deleted behind the server's back.
    const ghost = `boo ${tag}`;
    expect((await put(`${dir}/ghost.txt`, ghost)).status).toBe(201);
    await store.removeBlob(sha(ghost));
    // A path whose blob's bytes changed behind the server's back (a disk fault, an edit).
    const original = `original ${tag}`;
    expect((await put(`${dir}/changed.txt`, original)).status).toBe(201);
    await store.writeBlob(sha(original), "changed outside");
    // A Maven version whose format row is missing: its artifact's maven-metadata.xml does not list it.
    const maven = freshName("mvn");
    await s.createRepository(maven, "maven");
    const lib = `com/acme/lib-${tag}`;
    expect((await s.call("PUT", `/repository/${maven}/${lib}/1.0/lib-${tag}-1.0.jar`, { key: s.bootstrapKey, body: randomBytes(32) })).status).toBe(201);
    await db.query(`delete from artifacts.maven_versions where repository = $1`, [maven]);
    const mavenMetadata = () => s.call("GET", `/repository/${maven}/${lib}/maven-metadata.xml`, { key: s.bootstrapKey });
    expect(await (await mavenMetadata()).text()).not.toContain("<version>1.0</version>");
    // An upload in progress, staged; and (the filesystem only: an object store dates its objects
    // itself, and a staged upload is left an hour) an abandoned one, two hours old.
    await store.writeStaged("upload-in-progress", "still coming");
    if (store.backdate) {
      await store.writeStaged("abandoned-upload", "half an upload");
      store.backdate({ staged: "abandoned-upload" }, 2 * HOUR);
    }

    const res = await walks("POST", "/api/walks/run");
    expect(res.status).toBe(202);
    const started = (await res.json()) as Run;
    expect(started).toMatchObject({ walk: "rebuild", trigger: "manual", jobs: ["reclaim", "repair", "backfill"] });
    const run = await ended("rebuild", started.id);
    expect(run.outcome).toBe("succeeded");
    expect(run.reference).toBeNull();
    expect(run.counts.backfill).toEqual({ filled: 1 });
    // The missing blob's row is dropped; the corrupt blob is removed and its path forgotten.
    expect(run.counts.repair).toMatchObject({ missing: 1, corrupt: 1, forgotten: 2 });
    expect(run.counts.reclaim).toMatchObject(store.backdate ? { tempFiles: 1, bytes: 14 } : { tempFiles: 0, bytes: 0 });
    // What it saw and how long it took: the rows left when it reached the index (ghost.txt and the
    // jar; changed.txt went with its corrupt blob before), the blobs it listed (the corrupt one and the jar's at least).
    expect(run.entries).toBe(2);
    expect(run.blobs).toBeGreaterThanOrEqual(2);
    expect(run.durationMs).toBeGreaterThanOrEqual(0);

    const meta = await metadata();
    expect(meta.has(`${dir}/ghost.txt`)).toBe(false);
    expect(meta.has(`${dir}/changed.txt`)).toBe(false);
    expect((await get(`${dir}/ghost.txt`)).status).toBe(404);
    // Never the bytes that were not what was published.
    expect((await get(`${dir}/changed.txt`)).status).toBe(404);
    expect(await store.hasBlob(sha(original))).toBe(false);
    expect(await (await mavenMetadata()).text()).toContain("<version>1.0</version>");
    if (store.backdate) expect(await store.hasStaged("abandoned-upload")).toBe(false);
    expect(await store.hasStaged("upload-in-progress")).toBe(true);

    // The walk's last run shows in the listing, and its meters reach the deployment's metrics.
    const walk = (await (await walks("GET", "/api/walks/rebuild")).json()) as Walk;
    expect(walk.lastRun).toMatchObject({ id: started.id, outcome: "succeeded", blobs: run.blobs, durationMs: run.durationMs });
    const metricsPath = "/metrics";
    const text = await eventually("walk meters in the deployment's metrics", async () => {
      const r = await fetch(`${s.urls.admin}${metricsPath}`, { headers: identityHeaders(s.internalSecret, "GET", metricsPath, `key:${s.tenant}:${keyId(s.bootstrapKey)}`) });
      const t = await r.text();
      return t.includes('svc_walk_runs_total{walk="rebuild",outcome="succeeded"') ? t : undefined;
    });
    expect(text).toContain("svc_walk_job_count");
    expect(text).toContain("svc_walk_blobs");
  });

  it("reclaim removes blobs no artifact references and uploads a crash left staged, once old enough, and counts them", async () => {
    const tag = randomBytes(4).toString("hex");
    // A blob whose path was removed outside the service: no row references it, two hours old.
    const orphan = `orphaned blob ${tag}`;
    await store.writeBlob(sha(orphan), orphan);
    // A crash between committing the staged upload as a blob and its row: the staged copy and its
    // blob (the filesystem's commit is a hard link, an object store's a copy).
    const cut = `cut-short upload ${tag}`;
    await store.writeStaged(`crashed-${tag}`, cut);
    if (store.kind === "filesystem") linkStagedAsBlob(s.storeRoot, `crashed-${tag}`, sha(cut));
    else await store.writeBlob(sha(cut), cut);
    // An abandoned upload never committed as a blob.
    await store.writeStaged(`abandoned-${tag}`, "abandoned");
    // Content an artifact holds, however old.
    const held = `held ${tag}`;
    expect((await put(`blobs-${tag}/held.txt`, held)).status).toBe(201);
    if (store.backdate) {
      for (const content of [orphan, cut, held]) store.backdate({ blob: sha(content) }, 2 * HOUR);
      store.backdate({ staged: `abandoned-${tag}` }, 2 * HOUR);
    } else {
      // The S3 pass: the objects written so far grow older than the suite's grace (not a timing
      // assertion: only their age matters). A staged upload is left an hour, so there both stay.
      await new Promise((r) => setTimeout(r, S3_RECLAIM_GRACE_MS + 1000));
    }
    // An orphan younger than svc.storage.reclaim-grace.
    const young = `young orphan ${tag}`;
    await store.writeBlob(sha(young), young);
    store.backdate?.({ blob: sha(young) }, 10 * 60_000);

    const res = await walks("POST", "/api/walks/run");
    expect(res.status).toBe(202);
    const run = await ended("rebuild", ((await res.json()) as Run).id);
    expect(run.outcome).toBe("succeeded");
    const freed = Buffer.byteLength(orphan) + Buffer.byteLength(cut);
    if (store.backdate) {
      expect(run.counts.reclaim).toMatchObject({ blobs: 2, blobBytes: freed, tempFiles: 2, bytes: freed + "abandoned".length });
      for (const name of [`crashed-${tag}`, `abandoned-${tag}`]) expect(await store.hasStaged(name), name).toBe(false);
    } else {
      expect(run.counts.reclaim).toMatchObject({ blobs: 2, blobBytes: freed, tempFiles: 0, bytes: freed });
      for (const name of [`crashed-${tag}`, `abandoned-${tag}`]) expect(await store.hasStaged(name), name).toBe(true);
    }
    for (const gone of [orphan, cut]) expect(await store.hasBlob(sha(gone)), gone).toBe(false);
    expect(await store.hasBlob(sha(held))).toBe(true);
    expect(await store.hasBlob(sha(young))).toBe(true);
    expect(await (await get(`blobs-${tag}/held.txt`)).text()).toBe(held);
  });

  it("a rebuild walk naming one job carries that job alone; with no rebuild walk, walking the store now runs every job", async () => {
    expect((await walks("PUT", "/api/walks/rebuild", { jobs: ["reclaim"] })).status).toBe(200);
    const one = (await (await walks("POST", "/api/walks/run")).json()) as Run;
    expect(one.jobs).toEqual(["reclaim"]);
    expect(Object.keys((await ended("rebuild", one.id)).counts)).toEqual(["reclaim"]);

    expect((await walks("DELETE", "/api/walks/rebuild")).status).toBe(204);
    const res = await walks("POST", "/api/walks/run");
    expect(res.status).toBe(202);
    const all = (await res.json()) as Run;
    expect(all).toMatchObject({ walk: "rebuild", jobs: ["reclaim", "repair", "backfill"] });
    expect((await ended("rebuild", all.id)).outcome).toBe("succeeded");
  });

  it("a run left running by a walker that died is marked interrupted, and its lease lapses", async () => {
    // What a walker killed mid-walk leaves: a lease that is no longer renewed and a "running" record.
    await db.query(`insert into walker.leases (name, holder, acquired_at, expires_at) values ('store', 'walker@dead:1', now(), now() + interval '3 seconds')`);
    const { rows } = await db.query(`insert into walker.runs (walk, trigger, holder, jobs, outcome) values ('rebuild', 'manual', 'walker@dead:1', '{reclaim}', 'running') returning id`);
    const deadRun = String(rows[0].id);
    expect((await walks("POST", "/api/walks/run")).status).toBe(409); // the lease still stands
    const res = await eventually("the dead holder's lease to lapse", async () => {
      const r = await walks("POST", "/api/walks/run");
      return r.status === 202 ? r : undefined;
    });
    const run = (await res.json()) as Run;
    const all = await runs("rebuild");
    expect(all.find((r) => r.id === deadRun)).toMatchObject({ outcome: "interrupted", node: "walker@dead:1" });
    expect((await ended("rebuild", run.id)).outcome).toBe("succeeded");
  });

  it("retention removes exactly what the repository's policy says, and publishes each removal", async () => {
    const dir = `retention-${randomBytes(4).toString("hex")}`;
    const events = await collectArtifactEvents(s.natsUrl, s.tenant, (e) => e.path.startsWith(`${dir}/`) && e.kind === "artifact.removed");
    try {
      const policy = await repos("PUT", "/api/repositories/default/retention", { path: `${dir}/app`, keepVersions: 2 });
      expect(policy.status).toBe(200);
      expect(await policy.json()).toEqual({ path: `${dir}/app`, keepVersions: 2 });
      expect((await repos("PUT", "/api/repositories/default/retention", { keepVersions: 0 })).status).toBe(400);
      expect((await repos("PUT", "/api/repositories/default/retention", { keepVersions: 2, colour: "red" })).status).toBe(400);
      expect((await repos("PUT", "/api/repositories/nope/retention", { keepVersions: 2 })).status).toBe(404);
      expect(await (await repos("GET", "/api/repositories/default/retention")).json()).toEqual({ path: `${dir}/app`, keepVersions: 2 });

      // Published one after another: 1.zip is the oldest.
      for (const v of ["1", "2", "3", "4"]) expect((await put(`${dir}/app/${v}.zip`, `app ${v}`)).status).toBe(201);
      for (const v of ["1", "2", "3"]) expect((await put(`${dir}/app/sub/${v}.zip`, `sub ${v}`)).status).toBe(201);
      for (const v of ["1", "2", "3"]) expect((await put(`${dir}/other/${v}.zip`, `other ${v}`)).status).toBe(201);

      const res = await walks("POST", "/api/walks/retention/run");
      expect(res.status).toBe(202);
      const run = await ended("retention", ((await res.json()) as Run).id);
      expect(run.outcome).toBe("succeeded");
      expect(run.counts.retention).toMatchObject({ versions: 7, removed: 3, kept: 4, skipped: 0 });

      const gone = [`${dir}/app/1.zip`, `${dir}/app/2.zip`, `${dir}/app/sub/1.zip`];
      for (const p of gone) expect((await get(p)).status, p).toBe(404);
      for (const p of [`${dir}/app/3.zip`, `${dir}/app/4.zip`, `${dir}/app/sub/2.zip`, `${dir}/app/sub/3.zip`, `${dir}/other/1.zip`, `${dir}/other/2.zip`, `${dir}/other/3.zip`]) {
        expect((await get(p)).status, p).toBe(200);
      }
      const got = await events.until("three removal events", (es) => es.length >= 3);
      expect(got.map((e) => e.path).sort()).toEqual(gone.sort());
      for (const e of got) expect(e).toMatchObject({ kind: "artifact.removed", reason: "retention", actor: { kind: "system", id: "walker" } });
      expect(got.find((e) => e.path === `${dir}/app/1.zip`)).toMatchObject({ size: 5, digest: `sha256:${sha("app 1")}` });

      expect((await repos("DELETE", "/api/repositories/default/retention")).status).toBe(204);
      expect((await repos("DELETE", "/api/repositories/default/retention")).status).toBe(404);
    } finally {
      await events.close();
    }
  });

  it("downloads are recorded for retention's \"not downloaded for\", in batches", async () => {
    const path = `downloads-${randomBytes(4).toString("hex")}/app.zip`;
    expect((await put(path, "zip")).status).toBe(201);
    expect((await metadata()).get(path)?.lastDownloaded).toBeNull();
    expect((await get(path)).status).toBe(200);
    const m = await eventually("the download to be recorded", async () => (await metadata()).get(path)?.lastDownloaded ?? undefined);
    expect(Date.parse(m)).toBeLessThanOrEqual(Date.now());
  });

  it("a walk on a seconds schedule runs by itself, and with two walker replicas each instant runs once", async () => {
    const added = await walks("POST", "/api/walks", { name: "tick", schedule: "*/2 * * * * *", jobs: ["reclaim"] });
    expect(added.status).toBe(201);
    const first = await eventually("a scheduled run", async () => (await runs("tick")).find((r) => r.outcome === "succeeded"));
    expect(first).toMatchObject({ trigger: "schedule", jobs: ["reclaim"] });
    expect(new Date(first.scheduledFor!).getUTCSeconds() % 2).toBe(0);

    const replica = await s.startReplica("walker");
    try {
      const since = (await runs("tick")).filter((r) => r.outcome === "succeeded").length;
      const later = await eventually("four more scheduled runs with two replicas", async () => {
        const all = await runs("tick");
        return all.filter((r) => r.outcome === "succeeded").length >= since + 4 && all.every((r) => r.outcome !== "running") ? all : undefined;
      }, 45_000);
      const instants = later.map((r) => r.scheduledFor);
      expect(new Set(instants).size).toBe(instants.length);
      // An instant due while the previous run still holds the store is skipped, with a record saying so.
      for (const r of later) {
        expect(r.trigger).toBe("schedule");
        if (r.outcome === "skipped") expect(r.detail).toMatch(/^skipped: walk tick is going over the store/);
        else expect(r.outcome).toBe("succeeded");
      }
    } finally {
      expect((await walks("PUT", "/api/walks/tick", { enabled: false })).status).toBe(200);
      await replica.stop();
    }
    const stopped = (await runs("tick")).length;
    await new Promise((r) => setTimeout(r, 3000)); // a disabled walk does not fire (not a timing assertion: nothing may happen)
    const after = await runs("tick");
    expect(after.filter((r) => r.outcome === "running")).toEqual([]);
    expect(after.length).toBeLessThanOrEqual(stopped + 1); // at most one instant already claimed when it was disabled
    expect((await walks("DELETE", "/api/walks/tick")).status).toBe(204);
  });

  it("while a walk holds the store elsewhere, a walk asked for is refused naming it, and a scheduled instant is skipped with a record naming it", async () => {
    // Another walker going over the store: its lease and its running record.
    const holder = `walker@other-${randomBytes(3).toString("hex")}`;
    await db.query(`insert into walker.leases (name, holder, acquired_at, expires_at) values ('store', $1, now(), now() + interval '10 minutes')`, [holder]);
    const { rows } = await db.query(`insert into walker.runs (walk, trigger, holder, jobs, outcome) values ('rebuild', 'manual', $1, '{reclaim}', 'running') returning id`, [holder]);
    const held = String(rows[0].id);
    try {
      const refused = await walks("POST", "/api/walks/retention/run");
      expect(refused.status).toBe(409);
      expect(((await refused.json()) as { detail: string }).detail).toContain(`walk rebuild is going over the store (run ${held}, on ${holder}, since `);
      expect((await walks("POST", "/api/walks/run")).status).toBe(409);

      expect((await walks("POST", "/api/walks", { name: "every-second", schedule: "* * * * * *", jobs: ["reclaim"] })).status).toBe(201);
      const skipped = await eventually("a skipped scheduled instant", async () => (await runs("every-second")).find((r) => r.outcome === "skipped"));
      expect(skipped).toMatchObject({ trigger: "schedule", jobs: ["reclaim"], started: skipped.ended });
      expect(skipped.detail).toContain(`skipped: walk rebuild is going over the store (run ${held}, on ${holder}`);
      expect(skipped.scheduledFor).not.toBeNull();
      expect((await runs("every-second")).filter((r) => r.outcome !== "skipped")).toEqual([]);
    } finally {
      await walks("DELETE", "/api/walks/every-second");
      await db.query(`delete from walker.leases where holder = $1`, [holder]);
      await db.query(`delete from walker.runs where id = $1`, [held]);
    }
  });

  it("one walk goes over the store at a time: of two asked for at once one starts and the other is refused naming it, and run records never overlap", async () => {
    const pairs: [string, string][] = [
      ["/api/walks/run", "/api/walks/run"],
      ["/api/walks/run", "/api/walks/retention/run"],
    ];
    for (const [a, b] of pairs) {
      // Asked together, the second arrives while the first holds the store; should the first
      // have ended before the second arrived both start, one after the other. Retry until the
      // refusal has been seen.
      let refusal: string | undefined;
      for (let attempt = 0; attempt < 5 && !refusal; attempt++) {
        const answers = await Promise.all([walks("POST", a), walks("POST", b)]);
        const statuses = answers.map((r) => r.status);
        const bodies = (await Promise.all(answers.map((r) => r.json()))) as (Run & { detail: string })[];
        const started = bodies.filter((_, i) => statuses[i] === 202);
        expect(started.length, `${a} + ${b}: ${statuses.join(", ")}`).toBeGreaterThanOrEqual(1);
        for (const [i, status] of statuses.entries()) {
          if (status === 202) continue;
          expect(status).toBe(409);
          const first = started[0]!;
          expect(bodies[i]!.detail).toContain(`walk ${first.walk} is going over the store (run ${first.id}, on ${first.node}, since `);
          refusal = bodies[i]!.detail;
        }
        for (const r of started) expect((await ended(r.walk, r.id)).outcome).toBe("succeeded");
      }
      expect(refusal, `${a} + ${b}: one of two asked for at once is refused`).toBeDefined();
    }

    const all = [...(await runs("rebuild")), ...(await runs("retention"))].filter((r) => r.outcome !== "skipped");
    all.sort((x, y) => Date.parse(x.started) - Date.parse(y.started));
    for (let i = 1; i < all.length; i++) {
      const prev = all[i - 1]!;
      expect(prev.ended, `run ${prev.id} of ${prev.walk} has ended`).not.toBeNull();
      expect(Date.parse(all[i]!.started), `run ${all[i]!.id} of ${all[i]!.walk} starts after run ${prev.id} of ${prev.walk} ended`).toBeGreaterThanOrEqual(Date.parse(prev.ended!));
    }
  });
});
