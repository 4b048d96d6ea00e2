// The spec's critical advisory "Two servers answer the same path with different content"
// (docs/operations/posture.md, svc.nodes.content-differs): the posture asks every artifacts
// node what it serves at a sample of paths older than a minute and names the nodes that
// disagree. Silent with one node and with two on the same store; raised, naming the node, when
// a second artifacts node is pointed at another filesystem root that lacks the blobs or holds
// other bytes under a digest.
import { createHash, randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSuite, type Suite } from "./suite.js";

type Advisory = { name: string; severity: "critical" | "warning"; summary: string; setting: string; nodes?: string[] };
type Posture = { count: number; advisories: Advisory[] };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const OURS = ["svc.nodes.content-differs", "svc.nodes.storage-differs"];

describe("artifacts nodes that serve different content for one path", () => {
  let s: Suite;
  const bodies = new Map<string, string>();
  const oddRoot = mkdtempSync(join(tmpdir(), "svc-odd-root-"));
  const posture = async () => (await (await s.call("GET", "/api/posture", { key: s.bootstrapKey })).json()) as Posture;
  const ours = (p: Posture) => p.advisories.filter((a) => OURS.includes(a.name));

  beforeAll(async () => {
    s = await startSuite();
    for (let i = 0; i < 6; i++) {
      const path = `diverge/${randomUUID()}.txt`;
      const body = `content ${i} ${randomUUID()}`;
      expect((await s.call("PUT", `/repository/default/${path}`, { key: s.bootstrapKey, body })).status).toBeLessThan(300);
      bodies.set(path, body);
    }
    // Only paths older than a minute are compared (a publish a moment ago may not have reached
    // every node's view): the test's clock is the index's, so its rows are made two minutes old.
    const db = new pg.Client({ connectionString: s.databaseUrl });
    await db.connect();
    try {
      await db.query("update artifacts.artifacts set updated_at = updated_at - interval '2 minutes' where path like 'diverge/%'");
    } finally {
      await db.end();
    }
  });
  afterAll(async () => {
    await s?.stop();
    rmSync(oddRoot, { recursive: true, force: true });
  });

  it("is silent with one artifacts node, and with two on the same store and database", async () => {
    expect(ours(await posture())).toEqual([]);
    const healthy = await s.startReplica("artifacts");
    try {
      await sleep(2_000); // its heartbeat reaches admin
      expect(ours(await posture())).toEqual([]);
    } finally {
      await healthy.stop();
    }
  }, 120_000);

  it("raises the critical advisory naming a node pointed at another filesystem root, and the paths it serves differently", async () => {
    // One blob in the odd root holds other bytes of the same size; the rest are missing there.
    const [firstPath, firstBody] = [...bodies][0]!;
    const digest = createHash("sha256").update(firstBody).digest("hex");
    mkdirSync(join(oddRoot, "blobs", "sha256", digest.slice(0, 2)), { recursive: true });
    writeFileSync(join(oddRoot, "blobs", "sha256", digest.slice(0, 2), digest), "x".repeat(Buffer.byteLength(firstBody)));
    const odd = await s.startReplica("artifacts", { SVC_FILESYSTEM_ROOT: oddRoot });
    try {
      let p = await posture();
      for (let end = Date.now() + 60_000; !p.advisories.some((a) => a.name === "svc.nodes.content-differs") && Date.now() < end; p = await posture()) await sleep(1_000);
      const a = p.advisories.find((x) => x.name === "svc.nodes.content-differs");
      expect(a).toMatchObject({ severity: "critical", setting: "svc.filesystem-root", nodes: [`artifacts@${hostname()}:${odd.pid}`] });
      expect(a!.summary).toMatch(/^1 artifacts node\(s\) serve different content than the others for the same path: default\/diverge\//);
      expect(p.advisories[0]!.severity).toBe("critical");
      // The store's fingerprint differs too: a warning of its own naming the same node, never the folder.
      expect(p.advisories.find((x) => x.name === "svc.nodes.storage-differs")).toMatchObject({ severity: "warning", setting: "svc.filesystem-root", nodes: a!.nodes });
      expect(JSON.stringify(p)).not.toContain(oddRoot);
      // Observing changes nothing: the odd root still holds only what it held, the main node still serves every path.
      const res = await s.call("GET", `/repository/default/${firstPath}`, { key: s.bootstrapKey });
      expect(await res.text()).toBe(firstBody);
    } finally {
      await odd.stop();
    }
  }, 120_000);
});
