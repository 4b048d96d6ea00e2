import { Readable } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import { ServiceError, invalid, notFound } from "@svc/contracts";
import type { ArtifactTarget } from "@svc/grants";
import { actorOf } from "../../domain/artifact-service.js";
import { parsePreconditions } from "../../domain/upload-checks.js";
import { readBody } from "../../routes/request-body.js";
import { baseUrl } from "../npm/npm-routes.js";
import { DL_TEMPLATE, crateOfIndexPath, cratePath, isCrateName } from "./cargo-index.js";
import { etagOfIndex, indexFile, type CargoRegistry } from "./cargo-registry.js";
import type { CargoStore } from "./cargo-store.js";

export interface CargoRoutesDeps {
  registry: CargoRegistry;
  store: Pick<CargoStore, "indexVersions">;
  /** svc.ui.public-url: the deployment's public base URL; blank: the address the client used. */
  publicUrl: string;
  /** Whether a keyless caller may read the repository (the gateway's decision): config.json's `auth-required` is its opposite. */
  anonymousRead: (repository: string) => boolean;
}

/** The largest owners body read: a list of logins. */
const MAX_OWNERS_BYTES = 64 * 1024;
/** crates.io's page size for a search, and its largest. */
const PER_PAGE = { default: 10, max: 100 };

const notAllowed = (allow: string, what: string) => new ServiceError("method_not_allowed", `${what} takes ${allow} here`, { headers: { allow } });

const streamed = (req: FastifyRequest): Readable => (req.body instanceof Readable ? req.body : Readable.from([]));

async function readLogins(req: FastifyRequest): Promise<string[]> {
  const body = await readBody(req, MAX_OWNERS_BYTES, () => new ServiceError("payload_too_large", `an owners body may be at most ${MAX_OWNERS_BYTES} bytes`));
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString("utf8"));
  } catch {
    throw invalid("body", 'the body is not valid JSON: send {"users": ["<login>", …]}');
  }
  const users = (doc as { users?: unknown } | null)?.users;
  if (!Array.isArray(users) || users.length === 0 || users.some((u) => typeof u !== "string" || u.trim() === "" || u.length > 200)) {
    throw invalid("users", 'the body must be {"users": ["<login>", …]} with at least one login');
  }
  return [...new Set((users as string[]).map((u) => u.trim()))];
}

/**
 * The Cargo registry protocol of a `cargo` repository under `/repository/<repository>/`: the
 * sparse index (config.json and the index files), the web API under `api/v1/crates` (publish,
 * yank, owners, search, download), and the .crate files under `crates/`, served by the file routes.
 */
export function cargoHandler(deps: CargoRoutesDeps) {
  const { registry, store } = deps;

  const config = async (req: FastifyRequest, reply: FastifyReply, repository: string) => {
    const base = baseUrl(req, repository, deps.publicUrl);
    const body = { dl: `${base}/${DL_TEMPLATE}`, api: base, ...(deps.anonymousRead(repository) ? {} : { "auth-required": true }) };
    return reply.type("application/json").send(body);
  };

  const index = async (req: FastifyRequest, reply: FastifyReply, repository: string, lower: string) => {
    const rows = await store.indexVersions(repository, lower);
    if (rows.length === 0) throw notFound(`no crate ${lower} in repository ${repository}`);
    const body = indexFile(rows);
    const etag = etagOfIndex(body);
    reply.header("etag", etag);
    const wanted = parsePreconditions(req.headers).ifNoneMatch;
    if (wanted === "*" || wanted?.includes(etag)) return reply.code(304).send();
    return reply.type("text/plain; charset=utf-8").send(body);
  };

  const api = async (req: FastifyRequest, reply: FastifyReply, a: ArtifactTarget): Promise<unknown> => {
    const [, , , name, ...rest] = a.segments;
    const method = req.method;
    const read = method === "GET" || method === "HEAD";
    const repository = a.repository;
    if (name === undefined) {
      if (!read) throw notAllowed("GET", "the crate search");
      const query = new URL(req.url, "http://x").searchParams;
      const perPage = Math.min(Math.max(Number.parseInt(query.get("per_page") ?? "", 10) || PER_PAGE.default, 1), PER_PAGE.max);
      const found = await registry.search(repository, (query.get("q") ?? "").trim().slice(0, 200), perPage);
      return { crates: found.crates, meta: { total: found.total } };
    }
    if (name === "new" && rest.length === 0) {
      if (method !== "PUT") throw notAllowed("PUT", "a publish");
      const body = streamed(req);
      const done = await registry.publish(repository, body, actorOf(req.principal)).catch((err: unknown) => {
        // Refused before the .crate was read: the rest of the body is drained, cargo is still sending it.
        body.resume();
        throw err;
      });
      req.log.info({ repository, crate: done.name, version: done.version, principal: req.principal.id }, "cargo crate version published");
      return { warnings: { invalid_categories: [], invalid_badges: [], other: [] } };
    }
    if (!isCrateName(name)) throw notFound(`no crate ${name}: not a valid crate name`);
    if (rest.length === 1 && rest[0] === "owners") {
      if (read) return { users: (await registry.owners(repository, name)).map((login, i) => ({ id: i + 1, login, name: null })) };
      if (method === "PUT") {
        const logins = await readLogins(req);
        const crate = await registry.addOwners(repository, name, logins);
        req.log.info({ repository, crate, owners: logins, principal: req.principal.id }, "cargo crate owners added");
        return { ok: true, msg: `${logins.join(", ")} ${logins.length === 1 ? "is" : "are"} now ${logins.length === 1 ? "an owner" : "owners"} of crate ${crate}` };
      }
      if (method === "DELETE") {
        const logins = await readLogins(req);
        const crate = await registry.removeOwners(repository, name, logins);
        req.log.info({ repository, crate, owners: logins, principal: req.principal.id }, "cargo crate owners removed");
        return { ok: true, msg: `${logins.join(", ")} ${logins.length === 1 ? "is" : "are"} no longer ${logins.length === 1 ? "an owner" : "owners"} of crate ${crate}` };
      }
      throw notAllowed("GET, PUT, DELETE", "a crate's owners");
    }
    const [version, what, ...more] = rest;
    if (version !== undefined && more.length === 0) {
      if (what === "download") {
        if (!read) throw notAllowed("GET, HEAD", "a download");
        // The file itself is served where config.json's `dl` names it (the file routes: holds, ranges, the read cache).
        return reply.redirect(`${baseUrl(req, repository, deps.publicUrl)}/${cratePath(name, version).split("/").map(encodeURIComponent).join("/")}`, 302);
      }
      if (what === "yank" || what === "unyank") {
        const yanked = what === "yank";
        if (method !== (yanked ? "DELETE" : "PUT")) throw notAllowed(yanked ? "DELETE" : "PUT", `a${yanked ? " yank" : "n unyank"}`);
        await registry.yank(repository, name, version, yanked);
        req.log.info({ repository, crate: name, version, principal: req.principal.id }, yanked ? "cargo crate version yanked" : "cargo crate version unyanked");
        return { ok: true };
      }
    }
    throw notFound(`no Cargo API route ${a.path}`);
  };

  return (req: FastifyRequest, reply: FastifyReply, a: ArtifactTarget): Promise<unknown> | undefined => {
    const read = req.method === "GET" || req.method === "HEAD";
    const [first] = a.segments;
    if (a.segments.length === 1 && first === "config.json") return read ? config(req, reply, a.repository) : Promise.reject(notAllowed("GET, HEAD", "config.json"));
    if (first === "api" && a.segments[1] === "v1" && a.segments[2] === "crates") return api(req, reply, a);
    if (first === "crates" && a.segments.length === 3) {
      // .crate files are artifacts: downloaded through the file routes, removed there too (their version leaves the index with them).
      if (read || req.method === "DELETE") return undefined;
      return Promise.reject(notAllowed("GET, HEAD, DELETE", "a .crate file (publish with cargo publish)"));
    }
    const lower = crateOfIndexPath(a.segments);
    if (lower !== undefined) return read ? index(req, reply, a.repository, lower) : Promise.reject(notAllowed("GET, HEAD", "an index file (publish with cargo publish)"));
    return Promise.reject(notFound(`no Cargo registry route ${a.path}: the index is sparse+<repository URL>/ (config.json, index files), the API under api/v1/crates`));
  };
}
