import { createHash } from "node:crypto";
import { ServiceError, notFound } from "@svc/contracts";
import type { GroupMember } from "../../domain/repository-list.js";
import type { GroupContext, GroupHandler } from "../format.js";
import { parseMavenPath } from "./maven-layout.js";
import { artifactVersioning } from "./maven-metadata.js";
import { mergeArtifactMetadata, parseArtifactMetadata } from "./maven-proxy.js";

export interface MavenGroupDeps {
  /**
   * A member's `<dir>/maven-metadata.xml` as that member serves it (the versions it hides left
   * out), or undefined when it serves none there: the one place a group reads its members'
   * metadata (formats/maven/index.ts: a hosted member's is the server's own, a proxy member's its
   * proxy's). A plugin list kept as a file is not read here: the group serves the first hosted
   * member's file.
   */
  metadataOf: (member: GroupMember, dir: readonly string[]) => Promise<string | undefined>;
}

const isNotFound = (err: unknown) => err instanceof ServiceError && err.code === "not_found";

/**
 * The reads of a Maven group repository (docs/integration/maven.md, "Group repositories"): an
 * artifact's `maven-metadata.xml` merged from its members' (mergeArtifactMetadata: every
 * version, in member order, `latest` and `release` the last listed), with its checksums computed
 * from the merged document; any other metadata document (a snapshot version's, a plugin list)
 * the first member's that has one. A file's checksum is the member's that serves the file (a
 * proxy member fetching it first). Files are the group's file reads.
 */
export function mavenGroupHandler(deps: MavenGroupDeps): GroupHandler {
  /** The group's document in `dir`; undefined when no member serves one (GroupContext.each: a failing member passed over). */
  const merged = async (group: GroupContext, dir: readonly string[]): Promise<string | undefined> => {
    const docs = (await group.each((m) => deps.metadataOf(m, dir))).filter((d): d is string => d !== undefined);
    const versioned = docs.filter((d) => /<versions>/.test(d));
    if (versioned.length === 0) return docs[0];
    const m = mergeArtifactMetadata(versioned.map(parseArtifactMetadata))!;
    return artifactVersioning(dir.slice(0, -1).join("."), dir[dir.length - 1]!, m);
  };

  /** A request only a hosted member's own protocol answers (a plugin list kept as a file, its checksums): the first whose answer is not a 404. */
  const firstHosted = async (group: GroupContext, what: string): Promise<unknown> => {
    for (const m of group.members) {
      if (m.type !== "hosted") continue;
      try {
        const answered = group.delegate(m);
        if (answered) return await answered;
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    throw notFound(`no artifact at ${what} in any member of the group`);
  };

  return (req, reply, a, group) => {
    const p = parseMavenPath(a.segments);
    const text = (type: string, body: string) => {
      reply.type(type).header("content-length", Buffer.byteLength(body));
      return reply.send(req.method === "HEAD" ? undefined : body);
    };
    const dir = p.kind === "metadata" ? p.dir : p.kind === "checksum" && p.of[p.of.length - 1] === "maven-metadata.xml" ? p.of.slice(0, -1) : undefined;
    if (dir) {
      return (async () => {
        const doc = await merged(group, dir);
        if (doc === undefined) return firstHosted(group, `${a.repository}/${a.path}`);
        // The checksum of the document as the group serves it (merged), not of any member's.
        return p.kind === "checksum" ? text("text/plain; charset=utf-8", createHash(p.algorithm).update(doc, "utf8").digest("hex")) : text("application/xml", doc);
      })();
    }
    if (p.kind === "checksum") {
      return (async () => {
        // The checksum of the file the group serves: that member's own answer (its digests of the bytes it holds).
        const member = await group.locate(p.of.join("/"));
        if (!member) throw notFound(`no artifact at ${a.repository}/${p.of.join("/")} in any member of the group`);
        return group.delegate(member);
      })();
    }
    return undefined;
  };
}
