import { describe, expect, it } from "vitest";
import { repositoryListFactory } from "./repository-list.js";

type Row = Awaited<ReturnType<Parameters<typeof repositoryListFactory>[0]["metadata"]["repositories"]>>[number];
const row = (name: string): Row => ({ name, format: "npm", retention: null, created: new Date(0), type: "hosted", upstreamUrl: null, members: null, quotaBytes: null, usedBytes: 0, scopeFromPath: false });

describe("the repository list", () => {
  it("a slow refresh begun before a creation never puts back a list without the repository just created", async () => {
    // The first read (the periodic refresh) answers late, with the list as it was before the creation.
    let releaseSlow = () => {};
    const reads: (() => Promise<Row[]>)[] = [
      () => new Promise((done) => (releaseSlow = () => done([row("old")]))),
      async () => [row("old"), row("made")],
    ];
    const list = repositoryListFactory({ metadata: { repositories: () => reads.shift()!(), upstreams: async () => [] }, log: { warn: () => {} } });
    const periodic = list.refresh();
    await list.refresh(); // the creation's own refresh
    expect(list.formatOf("made")).toBe("npm");
    releaseSlow();
    await periodic;
    expect(list.formatOf("made")).toBe("npm");
  });
});
