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
  /** The most bytes of merged documents kept (default 64 MiB). */
  maxBytes?: number;
}

const MERGED_BYTES = 64 * 1024 * 1024;

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
  /** One member's document of `name` as it serves it (serialised, with its entity tag), with the group's tarball URLs; undefined: it has no such package. */
  const memberDocument = async (member: GroupMember, name: string, base: string, kind: Kind): Promise<{ etag: string; body: string } | undefined> => {
    if (member.type === "proxy") {
      const doc = await deps.proxy?.document(member.name, name, base, kind === "abbreviated");
      return doc ? { etag: doc.etag, body: doc.body } : undefined;
    }
    const doc = await deps.documents.get(kind, member.name, name, base);
    return doc?.body ? { etag: doc.etag, body: doc.body.toString("utf8") } : undefined;
  };

  // The merged documents last made, by group, package, kind and URL, each under the entity tags of
  // the member documents it was made from: while no member's document changed, the group's is not
  // parsed, merged and serialised again (a large package's document is megabytes of JSON).
  const made = new Map<string, { stamp: string; body: string; etag: string }>();
  let madeBytes = 0;
  const keepMade = (key: string, entry: { stamp: string; body: string; etag: string }) => {
    const old = made.get(key);
    if (old) (made.delete(key), (madeBytes -= old.body.length));
    if (entry.body.length > (deps.maxBytes ?? MERGED_BYTES)) return;
    made.set(key, entry);
    madeBytes += entry.body.length;
    for (const [oldest, e] of made) {
      if (madeBytes <= (deps.maxBytes ?? MERGED_BYTES)) break;
      made.delete(oldest);
      madeBytes -= e.body.length;
    }
  };

  /** The group's document of `name`, serialised, with a strong entity tag of its bytes; undefined when no member has the package. */
  const merged = async (group: GroupContext, name: string, base: string, kind: Kind): Promise<{ body: string; etag: string; doc: () => UpstreamPackument } | undefined> => {
    const members = await group.each((m) => memberDocument(m, name, base, kind));
    const stamp = members.map((m) => m?.etag ?? "-").join(" ");
    const key = `${kind}\n${group.members.map((m) => m.name).join(",")}\n${name}\n${base}`;
    const hit = made.get(key);
    if (hit?.stamp === stamp) {
      made.delete(key);
      made.set(key, hit);
      return { body: hit.body, etag: hit.etag, doc: () => JSON.parse(hit.body) as UpstreamPackument };
    }
    // A member whose document lists no version (every one held or hidden there) has nothing of the package to give, its tags neither.
    const docs = members.map((m) => (m ? (JSON.parse(m.body) as UpstreamPackument) : undefined)).map((d) => (d && Object.keys(d.versions ?? {}).length > 0 ? d : undefined));
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
    const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
    keepMade(key, { stamp, body, etag });
    return { body, etag, doc: () => doc };
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
    const parsed = doc.doc();
    const tags = parsed["dist-tags"] ?? {};
    const versions = parsed.versions ?? {};
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
          return doc.doc()["dist-tags"] ?? {};
        })();
      }
      // ping, audits and the rest: as any member answers them (they name no package; the gateway answers whoami).
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
