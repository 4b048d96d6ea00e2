import type { FastifyReply, FastifyRequest } from "fastify";
import { ServiceError, notFound } from "@svc/contracts";
import type { ArtifactTarget } from "@svc/grants";
import type { IndexReadCache } from "../domain/index-read-cache.js";
import type { GroupMember } from "../domain/repository-list.js";
import { CooldownRefusal, type Formats, type GroupContext } from "../formats/format.js";
import type { LiveFile } from "../proxy/file-fetch.js";
import type { IndexRow } from "../store/index-changes.js";
import { takesLiveFile } from "./artifact-answer.js";

/** A file found in a member: the member's own target for the path, and its index row as read. */
export interface MemberFile {
  target: ArtifactTarget;
  found: { row: IndexRow; cached: boolean };
}

/** A file a proxy member is fetching, answered as it arrives (proxy/file-fetch.ts). */
export interface MemberLiveFile {
  target: ArtifactTarget;
  live: LiveFile;
}

export interface GroupReadsDeps {
  /** The path index, through the read cache. */
  reads: Pick<IndexReadCache, "find">;
  formats: Pick<Formats, "of">;
  /** Why a held row is not served (the file routes' own refusal). */
  heldRefusal: (a: ArtifactTarget, row: IndexRow) => Error;
}

const names = (members: readonly GroupMember[]) => members.map((m) => m.name).join(", ") || "none";

/**
 * Group repositories (docs/administration/repositories.md, "Group repositories"): several
 * repositories of one format, hosted and proxy, behind one URL, asked in order.
 *
 * - A read of a file is answered by the first member that holds the path and serves it; a proxy
 *   member fetches what it lacks from its upstream (its format's `beforeRead`) only when no
 *   earlier member had the file. A file a member holds but does not serve (held by the screening
 *   gate or an administrator, refused by the gate on its way in) is passed over, as that member's
 *   metadata hides its version, so the next member's copy is served; the refusal is answered only
 *   when no member serves the file.
 * - What a format serves of its own (merged metadata) is its `group` handler's (formats/format.ts).
 * - A write goes to the group's first hosted member, as a write to it would (the same path,
 *   the same checks, its events naming it); with none, it is refused (405) saying so.
 * - A removal through a group is refused (405): a group holds nothing of its own.
 *
 * The gateway authorises a request through a group against the group's name, like any
 * repository's: a grant on the group is what a client needs, whichever member answers.
 */
export function groupReadsFactory(deps: GroupReadsDeps) {
  /** The first member that has `path` and serves it, fetching through proxy members in order; see above. */
  const find = async (a: ArtifactTarget, members: readonly GroupMember[], live = false): Promise<MemberFile | MemberLiveFile | undefined> => {
    let refusal: unknown;
    for (const m of members) {
      const target: ArtifactTarget = { ...a, repository: m.name };
      try {
        let found = await deps.reads.find(m.name, a.path);
        if (!found.row && m.type === "proxy") {
          const fetch = deps.formats.of(m.name)?.beforeRead;
          if (!fetch) continue;
          const arriving = await fetch(target, { live });
          if (arriving) return { target, live: arriving };
          found = await deps.reads.find(m.name, a.path);
        }
        const row = found.row;
        if (!row) continue;
        if (row.heldReason) {
          refusal ??= deps.heldRefusal(target, row);
          continue;
        }
        return { target, found: { row, cached: found.cached } };
      } catch (err) {
        // A member that does not have it is no answer; one that refused (or failed) is the answer
        // only when no later member has the file. The cooldown's refusal is one, though Maven's
        // is a 404 (so that Maven tries its next repository): it says why, and is logged.
        if (err instanceof CooldownRefusal || !(err instanceof ServiceError && err.code === "not_found")) refusal ??= err;
      }
    }
    if (refusal) throw refusal;
    return undefined;
  };

  const context = (req: FastifyRequest, reply: FastifyReply, a: ArtifactTarget, members: readonly GroupMember[]): GroupContext => ({
    members,
    async locate(path) {
      const hit = await find({ repository: a.repository, path, segments: path.split("/"), folder: false }, members);
      return hit ? members.find((m) => m.name === hit.target.repository) : undefined;
    },
    delegate: (member) => deps.formats.of(member.name)?.handle?.(req, reply, { ...a, repository: member.name }),
    async each<T>(read: (member: GroupMember) => Promise<T | undefined>) {
      let failure: unknown;
      const got = await Promise.all(
        members.map((m) =>
          read(m).catch((err: unknown) => {
            if (err instanceof ServiceError && err.code === "not_found") return undefined;
            req.log.warn({ err, repository: a.repository, member: m.name, path: a.path }, "a group member could not be read: the group answers without it");
            failure ??= err;
            return undefined;
          }),
        ),
      );
      if (failure && got.every((x) => x === undefined)) throw failure;
      return got;
    },
  });

  return {
    /**
     * A GET or HEAD of a group: its format's merged metadata, else the member file to serve.
     * Answers `answered` when the format's group handler took the request.
     */
    async read(req: FastifyRequest, reply: FastifyReply, a: ArtifactTarget, members: readonly GroupMember[]): Promise<{ answered: Promise<unknown> } | MemberFile | MemberLiveFile> {
      const own = deps.formats.of(a.repository)?.group?.(req, reply, a, context(req, reply, a, members));
      if (own) return { answered: own };
      const hit = await find(a, members, takesLiveFile(req));
      if (!hit) throw notFound(`no artifact at ${a.repository}/${a.path} in any member of the group (${names(members)})`);
      return hit;
    },

    /** Where a write to a group goes: the same path in its first hosted member; a removal, or a group without a hosted member, is refused. */
    writeTarget(method: string, a: ArtifactTarget, members: readonly GroupMember[]): ArtifactTarget {
      if (method === "DELETE") {
        throw new ServiceError("method_not_allowed", `${a.repository} is a group repository: nothing is removed through it; remove it from the member repository that holds it (members: ${names(members)})`, {
          headers: { allow: "GET, HEAD, PUT, POST" },
        });
      }
      const hosted = members.find((m) => m.type === "hosted");
      if (!hosted) {
        throw new ServiceError(
          "method_not_allowed",
          `${a.repository} is a group repository with no hosted member (members: ${names(members)}): a publish through a group goes to its first hosted member, so nothing can be published through it; publish to a hosted repository`,
          { headers: { allow: "GET, HEAD" } },
        );
      }
      return { ...a, repository: hosted.name };
    },
  };
}
export type GroupReads = ReturnType<typeof groupReadsFactory>;
