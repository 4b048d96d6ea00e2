import type { FastifyReply, FastifyRequest } from "fastify";
import { describe, expect, it } from "vitest";
import type { ArtifactTarget } from "@svc/grants";
import type { GroupContext } from "../format.js";
import { npmGroupHandler } from "./npm-group.js";

/** A member's hosted document as the document cache gives it: its entity tag and bytes. */
type Doc = { etag: string; versions: string[]; latest: string };
const body = (name: string, d: Doc) =>
  Buffer.from(JSON.stringify({ name, "dist-tags": { latest: d.latest }, versions: Object.fromEntries(d.versions.map((v) => [v, { name, version: v, dist: { tarball: `x/${name}-${v}.tgz` } }])) }));

function answer() {
  const out: { status: number; body?: string; headers: Record<string, string> } = { status: 200, headers: {} };
  const reply = {
    header: (k: string, v: string) => ((out.headers[k] = v), reply),
    type: (t: string) => ((out.headers["content-type"] = t), reply),
    code: (c: number) => ((out.status = c), reply),
    send: (b?: string) => ((out.body = b), reply),
  };
  return { out, reply: reply as unknown as FastifyReply };
}

describe("an npm group's merged documents", () => {
  const members: Record<string, Doc> = {
    hosted: { etag: '"h1"', versions: ["1.0.0"], latest: "1.0.0" },
    other: { etag: '"o1"', versions: ["2.0.0"], latest: "2.0.0" },
  };
  const handler = npmGroupHandler({
    publicUrl: "https://npm.example",
    documents: { get: async (_kind, repository, name) => ({ etag: members[repository]!.etag, body: body(name, members[repository]!) }) },
  });
  const group: GroupContext = {
    members: [
      { name: "hosted", type: "hosted" },
      { name: "other", type: "hosted" },
    ],
    locate: async () => undefined,
    delegate: () => undefined,
    each: async (read) => Promise.all(group.members.map(read)),
  };
  const get = async () => {
    const { out, reply } = answer();
    const req = { headers: { accept: "application/json" }, method: "GET" } as unknown as FastifyRequest;
    await handler(req, reply, { repository: "team", path: "pkg", segments: ["pkg"] } as ArtifactTarget, group);
    return { etag: out.headers.etag, doc: JSON.parse(out.body!) as { versions: Record<string, unknown>; "dist-tags": Record<string, string> } };
  };

  it("is made again only when a member's document changes (its entity tag)", async () => {
    const first = await get();
    expect(Object.keys(first.doc.versions)).toEqual(["1.0.0", "2.0.0"]);
    expect(first.doc["dist-tags"].latest).toBe("1.0.0");

    // The same entity tag stands for the same bytes: the merged document kept is served.
    members.other!.versions = ["2.0.0", "2.1.0"];
    expect(await get()).toEqual(first);

    // A member's new document (a new tag) makes a new merged one.
    members.other!.etag = '"o2"';
    const second = await get();
    expect(Object.keys(second.doc.versions)).toEqual(["1.0.0", "2.0.0", "2.1.0"]);
    expect(second.etag).not.toBe(first.etag);
  });
});
