import { createHash } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { invalid, notFound } from "@svc/contracts";
import type { GroupMember } from "../../domain/repository-list.js";
import { parsePreconditions } from "../../domain/upload-checks.js";
import type { GroupContext, GroupHandler } from "../format.js";
import { visibleTags, type NpmDocumentCache } from "./npm-document-cache.js";
import { ABBREVIATED_TYPE, packageAt, wantsAbbreviated } from "./npm-documents.js";
import { mergePackuments, type UpstreamPackument } from "./npm-proxy.js";
import type { NpmProxy } from "./npm-proxy-service.js";
import { baseUrl } from "./npm-routes.js";

export interface NpmGroupDeps {
  /** Hosted members' documents as they serve them (held versions left out, tags repaired), built under the group's URL. */
  documents: Pick<NpmDocumentCache, "get">;
  /** Proxy members' packuments as they serve them (held, refused and too young versions left out); absent: npm proxies are not served. */
  proxy?: Pick<NpmProxy, "document">;
  /** svc.ui.public-url, for the tarball URLs. */
  publicUrl: string;
}

type Kind = "full" | "abbreviated";

/**
 * The reads of an npm group repository (docs/integration/npm.md, "Group repositories"): a
 * package's document merged from its members' (mergePackuments: versions merged, the first
 * member that lists a version wins it; `dist-tags` whole from the first member that has the
 * package), each member's document as that member serves it (its hidden versions stay hidden),
 * its tarball URLs under the group's URL; one version's manifest and the dist-tags read from it.
 * Tarballs are files: the group's file reads serve them from the first member that has them.
 */
export function npmGroupHandler(deps: NpmGroupDeps): GroupHandler {
  /** One member's document of `name` as it serves it, with the group's tarball URLs; undefined: it has no such package. */
  const memberDocument = async (member: GroupMember, name: string, base: string, kind: Kind): Promise<UpstreamPackument | undefined> => {
    if (member.type === "proxy") {
      const doc = await deps.proxy?.document(member.name, name, base, kind === "abbreviated");
      return doc ? (JSON.parse(doc.body) as UpstreamPackument) : undefined;
    }
    const doc = await deps.documents.get(kind, member.name, name, base);
    return doc?.body ? (JSON.parse(doc.body.toString("utf8")) as UpstreamPackument) : undefined;
  };

  /** The group's document of `name`, serialised, with a strong entity tag of its bytes; undefined when no member has the package. */
  const merged = async (group: GroupContext, name: string, base: string, kind: Kind): Promise<{ body: string; etag: string; doc: UpstreamPackument } | undefined> => {
    // A member whose document lists no version (every one held or hidden there) has nothing of the package to give, its tags neither.
    const docs = (await group.each((m) => memberDocument(m, name, base, kind))).map((d) => (d && Object.keys(d.versions ?? {}).length > 0 ? d : undefined));
    const doc = mergePackuments(docs);
    if (!doc) return undefined;
    doc["dist-tags"] = visibleTags(doc["dist-tags"] ?? {}, Object.keys(doc.versions ?? {}));
    // The newest change of any member is the group document's.
    const modified = docs.map((d) => (kind === "abbreviated" ? d?.modified : d?.time?.modified)).filter((m): m is string => typeof m === "string").sort().pop();
    if (modified !== undefined) {
      if (kind === "abbreviated") doc.modified = modified;
      else doc.time = { ...doc.time, modified };
    }
    const body = JSON.stringify(doc);
    return { body, etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`, doc };
  };

  const noPackage = (repository: string, name: string) => notFound(`no package ${name} in group ${repository} (nor in any of its members)`);

  const document = async (req: FastifyRequest, reply: FastifyReply, repository: string, group: GroupContext, name: string) => {
    const small = wantsAbbreviated(req.headers.accept);
    const doc = await merged(group, name, baseUrl(req, repository, deps.publicUrl), small ? "abbreviated" : "full");
    if (!doc) throw noPackage(repository, name);
    reply.header("etag", doc.etag).header("vary", "Accept, Accept-Encoding");
    if (parsePreconditions(req.headers).ifNoneMatch?.includes(doc.etag)) return reply.code(304).send();
    return reply.type(small ? ABBREVIATED_TYPE : "application/json").send(doc.body);
  };

  /** GET /<name>/<version or dist-tag>: picked out of the merged document. */
  const version = async (req: FastifyRequest, reply: FastifyReply, repository: string, group: GroupContext, name: string, wanted: string) => {
    const doc = await merged(group, name, baseUrl(req, repository, deps.publicUrl), "full");
    if (!doc) throw noPackage(repository, name);
    const tags = doc.doc["dist-tags"] ?? {};
    const versions = doc.doc.versions ?? {};
    const v = Object.hasOwn(tags, wanted) ? tags[wanted]! : wanted;
    if (!Object.hasOwn(versions, v)) throw notFound(`${name} has no version or dist-tag ${wanted} that group ${repository} serves`);
    return reply.type("application/json").send(versions[v]);
  };

  return (req, reply, a, group) => {
    const { members } = group;
    if (a.segments[0] === "-") {
      const [, what, ...rest] = a.segments;
      const at = what === "package" ? packageAt(rest) : undefined;
      if (at && at.rest.length === 1 && at.rest[0] === "dist-tags") {
        return (async () => {
          const doc = await merged(group, at.name, baseUrl(req, a.repository, deps.publicUrl), "abbreviated");
          if (!doc) throw noPackage(a.repository, at.name);
          return doc.doc["dist-tags"] ?? {};
        })();
      }
      // whoami, ping and the rest: as any member answers them (they name no package).
      const first = members[0];
      return first ? group.delegate(first) : Promise.reject(notFound(`group ${a.repository} has no members`));
    }
    const at = packageAt(a.segments);
    if (!at) return Promise.reject(invalid("path", `${a.path} does not start with a valid npm package name`));
    const { name, rest } = at;
    // Tarballs are files, served from the first member that has them (a proxy member fetching it).
    if (rest.length === 2 && rest[0] === "-") return undefined;
    if (rest.length === 0) return document(req, reply, a.repository, group, name);
    if (rest.length === 1) return version(req, reply, a.repository, group, name, rest[0]!);
    return Promise.reject(notFound(`no npm route ${a.path}`));
  };
}
