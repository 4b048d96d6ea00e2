import { describe, expect, it } from "vitest";
import type { Heartbeat } from "@svc/kit";
import { compareContent, contentAdvisories, contentCheckFactory, oddOnes, type ContentAnswer, type ContentReply } from "./content-check.js";

const A = "a".repeat(64);
const B = "b".repeat(64);

/** A node's reply: its answers, on store `store` and database `db`. */
const reply = (node: string, answers: Array<Partial<ContentAnswer>>, store = "s1", db = "d1", sample: ContentReply["sample"] = []): ContentReply => ({
  node,
  storage: { kind: "filesystem", fingerprint: store },
  database: db,
  sample,
  answers: answers.map((a, i) => ({ repository: "default", path: `p${i}.txt`, ...a })),
});
const ok = (sha256 = A, size = 3): Partial<ContentAnswer> => ({ sha256, size, blob: "ok" });

describe("comparing what artifacts nodes serve", () => {
  it("finds nothing when every node serves the same content", () => {
    expect(compareContent([reply("n1", [ok(), ok(B, 5)]), reply("n2", [ok(), ok(B, 5)]), reply("n3", [ok(), ok(B, 5)])])).toBeUndefined();
  });

  it("names the node that disagrees with the majority, and the path", () => {
    const d = compareContent([reply("n1", [ok(), ok()]), reply("n2", [ok(), ok()]), reply("n3", [ok(), ok(B, 9)], "s2")]);
    expect(d).toMatchObject({ nodes: ["n3"], paths: ["default/p1.txt"], store: true, database: false });
  });

  it("in a tie, names the node that lacks the blob or reads other bytes, not the one that serves it", () => {
    expect(compareContent([reply("n1", [ok()]), reply("n2", [{ sha256: A, size: 3, blob: "missing" }])])?.nodes).toEqual(["n2"]);
    expect(compareContent([reply("n1", [{ sha256: A, size: 3, blob: "corrupt" }]), reply("n2", [ok()])])?.nodes).toEqual(["n1"]);
    expect(compareContent([reply("n1", [ok()]), reply("n2", [{}], "s1", "d2")])).toMatchObject({ nodes: ["n2"], database: true });
  });

  it("in a tie of two servable contents, names both: neither can be taken as right", () => {
    expect(compareContent([reply("n1", [ok()]), reply("n2", [ok(B, 3)])])?.nodes).toEqual(["n1", "n2"]);
    expect(oddOnes(new Map([["x", "1"], ["y", "2"], ["z", "2"]]))).toEqual(["x"]);
  });

  it("leaves out a path any node calls young, and nodes that did not answer", () => {
    expect(compareContent([reply("n1", [{ ...ok(), young: true }]), reply("n2", [ok(B, 3)])])).toBeUndefined();
    expect(compareContent([reply("n1", [ok()])])).toBeUndefined();
    // A path only one node was asked about has nobody to disagree with.
    expect(compareContent([reply("n1", [ok(), ok()]), { ...reply("n2", [ok()]) }])).toBeUndefined();
  });

  it("finds nothing when every node lacks the same blob: they serve the same (nothing)", () => {
    expect(compareContent([reply("n1", [{ sha256: A, size: 3, blob: "missing" }]), reply("n2", [{ sha256: A, size: 3, blob: "missing" }])])).toBeUndefined();
  });

  it("raises the critical advisory naming nodes, paths and the settings to check, and a warning for nodes on another store", () => {
    const replies = [reply("n1", [ok(), ok(), ok(), ok(), ok()]), reply("n2", [ok(), ok(), ok(), ok(), ok()]), reply("n3", Array.from({ length: 5 }, () => ({ sha256: A, size: 3, blob: "missing" as const })), "fp-of-the-odd-store")];
    const advisories = contentAdvisories(compareContent(replies), replies);
    expect(advisories).toEqual([
      expect.objectContaining({ name: "svc.nodes.content-differs", severity: "critical", setting: "svc.filesystem-root", nodes: ["n3"], summary: expect.stringContaining("default/p0.txt, default/p1.txt, default/p2.txt and 2 more") }),
      expect.objectContaining({ name: "svc.nodes.storage-differs", severity: "warning", setting: "svc.filesystem-root", nodes: ["n3"] }),
    ]);
    expect(JSON.stringify(advisories)).not.toContain("fp-of-the-odd-store");
  });

  it("in a tie of two nodes, names the store of the node that serves content differently, not the other's", () => {
    const replies = [reply("n1", [ok()]), reply("n2", [{ sha256: A, size: 3, blob: "missing" }], "s2")];
    expect(contentAdvisories(compareContent(replies), replies).map((a) => [a.name, a.nodes])).toEqual([
      ["svc.nodes.content-differs", ["n2"]],
      ["svc.nodes.storage-differs", ["n2"]],
    ]);
    // With nothing to tell them apart, both are named.
    expect(contentAdvisories(undefined, [reply("n1", []), reply("n2", [], "s2")]).map((a) => a.nodes)).toEqual([["n1", "n2"]]);
  });

  it("names the database when the odd node's index is another", () => {
    const replies = [reply("n1", [ok()]), reply("n2", [ok()]), reply("n3", [{}], "s1", "d2")];
    expect(contentAdvisories(compareContent(replies), replies).map((a) => [a.name, a.setting])).toEqual([
      ["svc.nodes.content-differs", "svc.database-url"],
      ["svc.nodes.storage-differs", "svc.database-url"],
    ]);
  });
});

describe("the posture's content check", () => {
  const hb = (node: string) => ({ node, service: node.split("@")[0]! }) as Heartbeat;

  function setUp(nodes: Heartbeat[], answer: (node: string, request: { sample?: number; paths?: ContentAnswer[] }) => ContentReply | undefined) {
    let clock = 0;
    const asked: unknown[] = [];
    const check = contentCheckFactory({
      ask: async (request, expect) => {
        asked.push(request);
        return expect.map((n) => answer(n, request as never)).filter(Boolean);
      },
      nodes: () => nodes,
      now: () => clock,
    });
    return { check, asked, advance: (ms: number) => (clock += ms) };
  }
  const sample = [{ repository: "default", path: "p0.txt" }];

  it("asks nothing with one artifacts node", async () => {
    const { check, asked } = setUp([hb("artifacts@1"), hb("gateway@1")], () => undefined);
    expect(await check.advisories()).toEqual([]);
    expect(asked).toEqual([]);
  });

  it("samples paths old enough, asks every artifacts node about them, confirms, and keeps the answer a while", async () => {
    const { check, asked, advance } = setUp([hb("artifacts@1"), hb("artifacts@2"), hb("gateway@1")], (node, r) =>
      reply(node, r.paths ? [node === "artifacts@2" ? { sha256: A, size: 3, blob: "missing" } : ok()] : [], "s1", "d1", r.sample ? sample : []),
    );
    const first = await check.advisories();
    expect(first.map((a) => [a.name, a.nodes])).toEqual([["svc.nodes.content-differs", ["artifacts@2"]]]);
    expect(asked).toEqual([{ sample: 16, olderThanMs: 60_000 }, { paths: sample, olderThanMs: 60_000 }, { paths: sample, olderThanMs: 60_000 }]);
    expect(await check.advisories()).toEqual(first);
    expect(asked).toHaveLength(3);
    advance(31_000);
    await check.advisories();
    expect(asked).toHaveLength(6);
  });

  it("raises nothing when a difference is gone on the second asking (a change landed between answers)", async () => {
    let round = 0;
    const { check } = setUp([hb("artifacts@1"), hb("artifacts@2")], (node, r) => {
      if (r.paths && node === "artifacts@1") round++;
      return reply(node, r.paths ? [round === 1 && node === "artifacts@2" ? ok(B) : ok()] : [], "s1", "d1", sample);
    });
    expect(await check.advisories()).toEqual([]);
  });

  it("does not count a node that did not answer", async () => {
    const { check } = setUp([hb("artifacts@1"), hb("artifacts@2"), hb("artifacts@3")], (node, r) => (node === "artifacts@3" ? undefined : reply(node, r.paths ? [ok()] : [], "s1", "d1", sample)));
    expect(await check.advisories()).toEqual([]);
  });
});
