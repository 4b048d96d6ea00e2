import type { FastifyReply, FastifyRequest } from "fastify";
import { describe, expect, it } from "vitest";
import { forbidden, notFound } from "@svc/contracts";
import type { ArtifactTarget } from "@svc/grants";
import type { GroupMember } from "../domain/repository-list.js";
import type { Format } from "../formats/format.js";
import type { IndexRow } from "../store/index-changes.js";
import { groupReadsFactory } from "./group-dispatch.js";

const row = (repository: string, path: string, heldReason: string | null = null): IndexRow => ({ repository, path, size: 1, sha256: "0".repeat(64), updated: new Date(0), heldReason });
const target = (repository: string, path: string): ArtifactTarget => ({ repository, path, segments: path.split("/"), folder: false });

/**
 * A group over an index in memory: `rows` by `repository/path`; a proxy member's upstream
 * (`upstream`, by repository) is fetched into the index by its beforeRead, and each fetch is logged.
 */
function setUp(rows: IndexRow[], upstream: Record<string, (path: string) => IndexRow | Error | undefined> = {}) {
  const index = new Map(rows.map((r) => [`${r.repository}/${r.path}`, r]));
  const fetched: string[] = [];
  const format: Format = {
    beforeRead: async (a) => {
      fetched.push(`${a.repository}/${a.path}`);
      const got = upstream[a.repository]?.(a.path);
      if (got instanceof Error) throw got;
      if (!got) throw notFound(`no ${a.path} upstream`);
      index.set(`${a.repository}/${a.path}`, got);
      return undefined;
    },
  };
  const groups = groupReadsFactory({
    reads: { find: async (repository, path) => ({ row: index.get(`${repository}/${path}`), cached: false }) },
    formats: { of: () => format },
    heldRefusal: (a, r) => forbidden(`${a.repository}/${a.path} is held: ${r.heldReason}`),
  });
  const read = async (members: GroupMember[], path: string) => {
    const got = await groups.read({} as FastifyRequest, {} as FastifyReply, target("g", path), members);
    if ("answered" in got) throw new Error("answered by the format");
    return got.target.repository;
  };
  return { read, groups, fetched };
}

const hosted = (name: string): GroupMember => ({ name, type: "hosted" });
const proxy = (name: string): GroupMember => ({ name, type: "proxy" });

describe("reads through a group", () => {
  it("serve the file of the first member, in order, that has the path", async () => {
    const { read } = setUp([row("b", "x/1.txt"), row("c", "x/1.txt"), row("c", "x/2.txt")]);
    expect(await read([hosted("a"), hosted("b"), hosted("c")], "x/1.txt")).toBe("b");
    expect(await read([hosted("a"), hosted("b"), hosted("c")], "x/2.txt")).toBe("c");
    expect(await read([hosted("c"), hosted("b")], "x/1.txt")).toBe("c");
    await expect(read([hosted("a"), hosted("b")], "x/3.txt")).rejects.toThrow(expect.objectContaining({ status: 404, message: "no artifact at g/x/3.txt in any member of the group (a, b)" }));
  });

  it("fetch through a proxy member only when no earlier member has the file", async () => {
    const { read, fetched } = setUp([row("hosted", "p.tgz")], { up: (path) => row("up", path) });
    expect(await read([hosted("hosted"), proxy("up")], "p.tgz")).toBe("hosted");
    expect(fetched).toEqual([]);
    expect(await read([hosted("hosted"), proxy("up")], "q.tgz")).toBe("up");
    expect(fetched).toEqual(["up/q.tgz"]);
    // First in order, the proxy member fetches even what a later member holds.
    expect(await read([proxy("up"), hosted("hosted")], "p.tgz")).toBe("up");
  });

  it("pass over a member that holds the file held, or whose upstream refuses it, and answer that refusal only when no member serves it", async () => {
    const { read } = setUp([row("a", "m.tgz", "malware"), row("b", "m.tgz"), row("a", "only.tgz", "malware")], { up: () => forbidden("refused by the gate") });
    expect(await read([hosted("a"), hosted("b")], "m.tgz")).toBe("b");
    expect(await read([proxy("up"), hosted("b")], "m.tgz")).toBe("b");
    await expect(read([hosted("a"), hosted("b")], "only.tgz")).rejects.toThrow(expect.objectContaining({ status: 403, message: "a/only.tgz is held: malware" }));
    await expect(read([proxy("up"), hosted("b")], "none.tgz")).rejects.toThrow(expect.objectContaining({ status: 403, message: "refused by the gate" }));
  });

  it("send a write to the first hosted member, refuse one when there is none, and refuse every removal", () => {
    const { groups } = setUp([]);
    expect(groups.writeTarget("PUT", target("g", "a/b.jar"), [proxy("up"), hosted("one"), hosted("two")])).toEqual(target("one", "a/b.jar"));
    expect(() => groups.writeTarget("PUT", target("g", "a/b.jar"), [proxy("up")])).toThrow(expect.objectContaining({ status: 405, message: expect.stringContaining("g is a group repository with no hosted member (members: up)") }));
    expect(() => groups.writeTarget("DELETE", target("g", "a/b.jar"), [hosted("one")])).toThrow(expect.objectContaining({ status: 405, message: expect.stringContaining("nothing is removed through it") }));
  });
});
