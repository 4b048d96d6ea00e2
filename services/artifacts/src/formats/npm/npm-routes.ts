import { Readable } from "node:stream";
import { negotiate } from "@fastify/accept-negotiator";
import type { FastifyReply, FastifyRequest } from "fastify";
import { ServiceError, conflict, invalid, notFound } from "@svc/contracts";
import type { ArtifactAddress } from "@svc/grants";
import { actorOf, type ArtifactService } from "../../domain/artifact-service.js";
import { npmDocumentCacheFactory, visibleTags, type NpmDocumentCache } from "./npm-document-cache.js";
import { ABBREVIATED_TYPE, packageAt, servedVersion, wantsAbbreviated } from "./npm-documents.js";
import type { NpmRegistry } from "./npm-registry.js";
import { parsePreconditions } from "../../domain/upload-checks.js";
import type { NpmStore } from "./npm-store.js";
import type { NpmProxy } from "./npm-proxy-service.js";
import { readBody } from "../../routes/request-body.js";
import type { AdvisoryAudit } from "../../gate/audit.js";
import { MAX_AUDIT_BYTES, bulkAudit, readAuditRequest, readAuditTree, treeAudit } from "./npm-audit.js";

export interface NpmRoutesDeps {
  npm: NpmRegistry;
  store: Pick<NpmStore, "findPackage" | "findVersion" | "versions" | "documentVersions">;
  artifacts: Pick<ArtifactService, "remove">;
  /** svc.ui.public-url: the deployment's public base URL; blank: the address the client used. */
  publicUrl: string;
  /** Whether a file is held (the screening gate): its version is not served. */
  held: (repository: string, path: string) => Promise<boolean>;
  /** Proxy repositories' packuments (docs/integration/npm.md, "Proxy repositories"); `isProxy` says which repositories are proxies. */
  proxy?: { npm: Pick<NpmProxy, "document">; isProxy: (repository: string) => boolean };
  /** The hosted repositories' serialised documents (shared with the group reads); made here when absent. */
  documents?: Pick<NpmDocumentCache, "get">;
  /** The advisory data (the screening gate's), for `npm audit`; absent: audits are not answered. */
  audit?: AdvisoryAudit;
}

/** The largest dist-tag body read (the version the tag points at, as a JSON string). */
const MAX_TAG_BYTES = 4096;

/** An npm handler answers; `undefined` leaves the request to the raw file routes (tarball downloads). */
export type NpmHandler = (req: FastifyRequest, reply: FastifyReply, a: ArtifactAddress) => Promise<unknown> | undefined;

async function readTag(req: FastifyRequest): Promise<unknown> {
  const body = await readBody(req, MAX_TAG_BYTES, () => new ServiceError("payload_too_large", `a dist-tag's body may be at most ${MAX_TAG_BYTES} bytes: the version it points at, as a JSON string`));
  try {
    return JSON.parse(body.toString("utf8"));
  } catch {
    throw invalid("body", "the body is not valid JSON");
  }
}

/**
 * A document's body as it arrives, read through the gateway signature's check (kit's
 * service.ts), never `req.raw`; none reads as empty (and is refused as no JSON object).
 */
/** Whether the client takes a gzip-encoded answer (npm, pnpm and yarn do): a large document is sent compressed. */
const acceptsGzip = (req: FastifyRequest): boolean => {
  const accept = req.headers["accept-encoding"];
  return accept !== undefined && negotiate(accept, ["gzip", "identity"]) === "gzip";
};
const streamedBody = (req: FastifyRequest): Readable => (req.body instanceof Readable ? req.body : Readable.from([]));

/**
 * The repository's public address, for the absolute tarball URLs npm fetches next: the
 * deployment's public base URL when set (behind a proxy that rewrites Host), else the origin
 * the client addressed, which the gateway stamps in X-Forwarded-Host/-Proto after checking it.
 * Never this service's own Host: that is the gateway's way in, an internal address.
 */
export function baseUrl(req: FastifyRequest, repository: string, publicUrl: string): string {
  const path = `/repository/${encodeURIComponent(repository)}`;
  if (publicUrl !== "") return `${publicUrl.replace(/\/+$/, "")}${path}`;
  const host = req.headers["x-forwarded-host"];
  if (typeof host !== "string" || host === "") throw invalid("Host", "the request names no host (send a Host header): the tarball URLs of a package document are made from it, unless svc.ui.public-url is set");
  const proto = req.headers["x-forwarded-proto"] === "https" ? "https" : "http";
  return `${proto}://${host}${path}`;
}

const METHODS = "GET, HEAD, PUT, DELETE";
const notAllowed = (what: string) => new ServiceError("method_not_allowed", `${what} takes ${METHODS.replace("GET, HEAD, ", "")} here`, { headers: { allow: METHODS } });

/** What a proxy repository answers a write: npm prints the reason. */
const proxyRefusal = (repository: string) =>
  new ServiceError("method_not_allowed", `${repository} is a proxy repository: it serves what its upstream has and takes no publishes, unpublishes or dist-tag changes; publish to a hosted repository`, { headers: { allow: "GET, HEAD" } });

/** The npm registry protocol of an `npm` repository, under `/repository/<repository>/`. */
export function npmHandler(deps: NpmRoutesDeps): NpmHandler {
  const { npm, store } = deps;

  const documents = deps.documents ?? npmDocumentCacheFactory({ store });

  /**
   * A package's document, with an ETag: npm keeps it in its cache and asks again with
   * If-None-Match, and an unchanged package is answered 304 without its document (without
   * building it, when it is not kept). No Last-Modified: from it a cache would guess a freshness
   * lifetime and go on using an old document without asking. Vary: the document depends on
   * Accept, and its encoding on Accept-Encoding (a large one is sent gzipped to a client that
   * takes gzip, as npm, pnpm and yarn do).
   */
  const document = async (req: FastifyRequest, reply: FastifyReply, repository: string, name: string) => {
    const small = wantsAbbreviated(req.headers.accept);
    const ifNoneMatch = parsePreconditions(req.headers).ifNoneMatch;
    const doc = await documents.get(small ? "abbreviated" : "full", repository, name, baseUrl(req, repository, deps.publicUrl), ifNoneMatch, acceptsGzip(req));
    if (!doc) throw notFound(`no package ${name} in repository ${repository}`);
    reply.header("etag", doc.etag).header("vary", "Accept, Accept-Encoding");
    if (!doc.body) return reply.code(304).send();
    if (doc.encoding) reply.header("content-encoding", doc.encoding);
    return reply.type(small ? ABBREVIATED_TYPE : "application/json").send(doc.body);
  };

  /** A proxy repository's packument: what its upstream has, less what the gate refuses or holds, tarballs under this server. */
  const proxiedDocument = async (req: FastifyRequest, reply: FastifyReply, proxy: NonNullable<NpmRoutesDeps["proxy"]>, repository: string, name: string) => {
    const small = wantsAbbreviated(req.headers.accept);
    const doc = await proxy.npm.document(repository, name, baseUrl(req, repository, deps.publicUrl), small);
    if (!doc) throw notFound(`no package ${name} in repository ${repository} or its upstream`);
    reply.header("etag", doc.etag).header("vary", "Accept, Accept-Encoding").headers(doc.headers);
    if (parsePreconditions(req.headers).ifNoneMatch?.includes(doc.etag)) return reply.code(304).send();
    reply.type(small ? ABBREVIATED_TYPE : "application/json");
    if (doc.gzipped && acceptsGzip(req)) return reply.header("content-encoding", "gzip").send(await doc.gzipped());
    return reply.send(doc.body);
  };

  /** GET /<name>/<version or dist-tag> of a proxy repository: picked out of its packument as served. */
  const proxiedVersion = async (req: FastifyRequest, reply: FastifyReply, proxy: NonNullable<NpmRoutesDeps["proxy"]>, repository: string, name: string, version: string) => {
    const doc = await proxy.npm.document(repository, name, baseUrl(req, repository, deps.publicUrl), false);
    if (!doc) throw notFound(`no package ${name} in repository ${repository} or its upstream`);
    const parsed = JSON.parse(doc.body) as { "dist-tags": Record<string, string>; versions: Record<string, unknown> };
    const v = Object.hasOwn(parsed["dist-tags"], version) ? parsed["dist-tags"][version]! : version;
    if (!Object.hasOwn(parsed.versions, v)) throw notFound(`${name} has no version or dist-tag ${version} that is served`);
    return reply.headers(doc.headers).type("application/json").send(parsed.versions[v]);
  };

  /** GET /<name>/<version or dist-tag>: one version's manifest, without building the package's document. */
  const versionDocument = async (req: FastifyRequest, reply: FastifyReply, repository: string, name: string, version: string) => {
    const pkg = await store.findPackage(repository, name);
    if (!pkg) throw notFound(`no package ${name} in repository ${repository}`);
    // A client's name is looked up in the tags' own names only (never `constructor`, `__proto__`…).
    const tagged = Object.hasOwn(pkg.distTags, version);
    let row = await store.findVersion(repository, name, tagged ? pkg.distTags[version]! : version);
    // A held version is not listed (the screening gate): asked for by number it is not found; a
    // tag on it names what the package document's repaired tags name.
    if (row && (await deps.held(repository, row.tarball))) {
      if (!tagged) throw notFound(`${name}@${version} is held and not served until an administrator releases it`);
      const listed = (await store.documentVersions(repository, name, undefined)).versions;
      const now = visibleTags(pkg.distTags, listed.map((v) => v.version))[version];
      row = now === undefined ? undefined : await store.findVersion(repository, name, now);
    }
    if (!row) throw notFound(`${name} has no version or dist-tag ${version}`);
    return reply.type("application/json").send(servedVersion(row, baseUrl(req, repository, deps.publicUrl)));
  };

  const special = async (req: FastifyRequest, reply: FastifyReply, a: ArtifactAddress): Promise<unknown> => {
    const [, what, ...rest] = a.segments;
    if (what === "ping" && rest.length === 0) return {};
    // `npm audit` (and npm install's audit): the advisories of the server's own advisory data that
    // affect the versions installed, in the bulk endpoint's shape (docs/integration/npm.md, "npm audit").
    if (what === "npm" && rest.join("/") === "v1/security/advisories/bulk") {
      if (req.method !== "POST") throw new ServiceError("method_not_allowed", "an audit is a POST of {\"<package>\": [\"<version>\", …]}", { headers: { allow: "POST" } });
      if (!deps.audit) throw notFound("this server answers no audits: it keeps no advisory data");
      const body = await readBody(req, MAX_AUDIT_BYTES, () => new ServiceError("payload_too_large", `an audit's body may be at most ${MAX_AUDIT_BYTES} bytes as sent`));
      return bulkAudit(deps.audit, await readAuditRequest(body, req.headers["content-encoding"]));
    }
    // pnpm's and yarn 1's audit (npm 6's endpoints): a dependency tree, answered with npm 6's report.
    if (what === "npm" && (rest.join("/") === "v1/security/audits" || rest.join("/") === "v1/security/audits/quick")) {
      if (req.method !== "POST") throw new ServiceError("method_not_allowed", "an audit is a POST of the dependency tree", { headers: { allow: "POST" } });
      if (!deps.audit) throw notFound("this server answers no audits: it keeps no advisory data");
      const body = await readBody(req, MAX_AUDIT_BYTES, () => new ServiceError("payload_too_large", `an audit's body may be at most ${MAX_AUDIT_BYTES} bytes as sent`));
      return treeAudit(deps.audit, await readAuditTree(body, req.headers["content-encoding"]));
    }
    if (what === "package") {
      const at = packageAt(rest);
      if (at && at.rest[0] === "dist-tags" && at.rest.length <= 2) {
        const tag = at.rest[1];
        const proxy = deps.proxy?.isProxy(a.repository) ? deps.proxy : undefined;
        if (proxy && req.method !== "GET") throw proxyRefusal(a.repository);
        if (proxy) {
          const doc = await proxy.npm.document(a.repository, at.name, baseUrl(req, a.repository, deps.publicUrl), true);
          if (!doc) throw notFound(`no package ${at.name} in repository ${a.repository} or its upstream`);
          return (JSON.parse(doc.body) as { "dist-tags": Record<string, string> })["dist-tags"];
        }
        if (tag === undefined && req.method === "GET") {
          const pkg = await store.findPackage(a.repository, at.name);
          if (!pkg) throw notFound(`no package ${at.name} in repository ${a.repository}`);
          return pkg.distTags;
        }
        if (tag !== undefined && (req.method === "PUT" || req.method === "POST")) return reply.code(201).send(await npm.setTag(a.repository, at.name, tag, await readTag(req)));
        if (tag !== undefined && req.method === "DELETE") return npm.removeTag(a.repository, at.name, tag);
        throw notAllowed("dist-tags");
      }
    }
    // The web login is the gateway's (its npm-login-route.ts); a name and password are not taken.
    if (what === "user" || (what === "v1" && rest[0] === "login")) {
      throw new ServiceError(
        "forbidden",
        `npm login with a name and password is not served here: sign in in the browser with npm login --auth-type=web --registry=${baseUrl(req, a.repository, deps.publicUrl)}/ (npm 9 and later do so by default), which saves a personal key; or put a key in .npmrc as //<host>/repository/${a.repository}/:_authToken=<key>`,
      );
    }
    throw notFound(`no npm route ${a.path}`);
  };

  return (req, reply, a) => {
    if (a.segments[0] === "-") return special(req, reply, a);
    const at = packageAt(a.segments);
    if (!at) return Promise.reject(invalid("path", `${a.path} does not start with a valid npm package name`));
    const { name, rest } = at;
    const read = req.method === "GET" || req.method === "HEAD";
    // Tarballs are artifacts: served by the file routes, stored once by digest (a proxy's fetched first: beforeRead).
    if (read && rest.length === 2 && rest[0] === "-") return undefined;
    const proxy = deps.proxy?.isProxy(a.repository) ? deps.proxy : undefined;
    if (proxy) {
      if (!read) {
        return Promise.reject(proxyRefusal(a.repository));
      }
      if (rest.length === 0) return proxiedDocument(req, reply, proxy, a.repository, name);
      if (rest.length === 1) return proxiedVersion(req, reply, proxy, a.repository, name, rest[0]!);
      return Promise.reject(notFound(`no npm route ${a.path}`));
    }
    const actor = actorOf(req.principal);
    return (async () => {
      if (rest.length === 0 || (rest.length === 2 && rest[0] === "-rev")) {
        if (read && rest.length === 0) return document(req, reply, a.repository, name);
        if (req.method === "PUT") {
          if ((await npm.put(a.repository, name, streamedBody(req), actor, { publish: rest.length === 0 })) === "published") {
            req.log.info({ repository: a.repository, package: name, principal: req.principal.id }, "npm package version published");
            return reply.code(201).send({ ok: true, id: name });
          }
          req.log.info({ repository: a.repository, package: name, principal: req.principal.id }, "npm package document edited");
          return { ok: true, id: name };
        }
        if (req.method === "DELETE" && rest.length === 2) {
          if (!(await npm.unpublish(a.repository, name, actor))) throw notFound(`no package ${name} in repository ${a.repository}`);
          req.log.info({ repository: a.repository, package: name, principal: req.principal.id }, "npm package unpublished");
          return { ok: true, id: name };
        }
        throw notAllowed(name);
      }
      // DELETE <tarball>/-rev/<rev>: what `npm unpublish <name>@<version>` sends after editing the version out.
      if (rest.length === 4 && rest[0] === "-" && rest[2] === "-rev" && req.method === "DELETE") {
        const path = `${name}/-/${rest[1]}`;
        if ((await store.versions(a.repository, name)).some((v) => v.tarball === path)) throw conflict(`${path} belongs to a published version: unpublish the version`);
        if (!(await deps.artifacts.remove({ repository: a.repository, segments: path.split("/"), path }, actor))) throw notFound(`no tarball ${path}`);
        return { ok: true };
      }
      if (rest.length === 1 && read) return versionDocument(req, reply, a.repository, name, rest[0]!);
      throw notFound(`no npm route ${a.path}`);
    })();
  };
}
