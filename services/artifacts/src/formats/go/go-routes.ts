import { Readable } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import { ServiceError, forbidden, invalid, notFound } from "@svc/contracts";
import type { ArtifactTarget } from "@svc/grants";
import type { FormatHandler } from "../format.js";
import { parseGoPath, versionError } from "./go-module.js";
import type { GoRegistry } from "./go-registry.js";
import { MAX_ZIP_FILE } from "./go-zip.js";
import type { GoVersionRow } from "./go-store.js";

/** What the protocol's reads need: a hosted repository's registry, or a group's members' merged (go-group.ts). */
export type GoReads = Pick<GoRegistry, "listed" | "latest" | "version" | "goMod">;

const notAllowed = (allow: string, what: string) => new ServiceError("method_not_allowed", `${what} takes ${allow} here`, { headers: { allow } });

/** The `.info` document: the version and its time (the upload's), as the go command reads it. */
const info = (row: GoVersionRow) => JSON.stringify({ Version: row.version, Time: row.uploaded.toISOString().replace(/\.\d{3}Z$/, "Z") });

/** A held version (the screening gate, an administrator) is refused as its zip is: 403, so the go command stops at it instead of looking elsewhere. */
const refuseHeld = (a: ArtifactTarget, row: GoVersionRow) => {
  if (row.held !== null) throw forbidden(`${a.repository}/${row.path} is held and not served until an administrator releases it: ${row.held}`);
};

/**
 * The GOPROXY protocol of a `go` repository under `/repository/<repository>/`: `<module>/@v/list`,
 * `<module>/@v/<version>.info`, `.mod`, `.zip` (a file: served, uploaded with PUT and removed
 * with DELETE by the file routes, through the format's `publish` and `removing`) and
 * `<module>/@latest`, the module path and version case-encoded (`!x` for `X`). What this
 * repository does not have answers 404, which the go command reads as "not here": with
 * `GOPROXY=<this>,direct` it asks the next source.
 */
export function goHandler(deps: { registry: GoReads }): FormatHandler {
  const { registry } = deps;

  const read = async (req: FastifyRequest, reply: FastifyReply, a: ArtifactTarget, r: Exclude<ReturnType<typeof parseGoPath>, undefined>) => {
    if (r.kind === "invalid") throw notFound(`no module here: ${r.reason}`);
    const { module } = r;
    if (r.kind === "list") {
      const versions = await registry.listed(a.repository, module);
      if (versions.length === 0) throw notFound(`no versions of module ${module} in repository ${a.repository}`);
      return reply.type("text/plain; charset=utf-8").send(versions.map((v) => `${v}\n`).join(""));
    }
    if (r.kind === "latest") {
      const row = await registry.latest(a.repository, module);
      if (!row) throw notFound(`no versions of module ${module} in repository ${a.repository}`);
      return reply.type("application/json").send(info(row));
    }
    const { version } = r as { version: string };
    const row = await registry.version(a.repository, module, version);
    if (!row) throw notFound(`no version ${version} of module ${module} in repository ${a.repository}`);
    refuseHeld(a, row);
    if (r.kind === "info") return reply.type("application/json").send(info(row));
    const mod = await registry.goMod(a.repository, module, version);
    if (!mod) throw notFound(`no version ${version} of module ${module} in repository ${a.repository}`);
    return reply.type("text/plain; charset=utf-8").send(mod);
  };

  return (req, reply, a) => {
    const r = a.folder ? undefined : parseGoPath(a.path);
    const isRead = req.method === "GET" || req.method === "HEAD";
    if (r?.kind === "zip") {
      if (isRead || req.method === "DELETE") return undefined;
      if (req.method !== "PUT") return Promise.reject(notAllowed("GET, HEAD, PUT, DELETE", "a module version's zip"));
      const wrong = versionError(r.module, r.version);
      if (wrong) {
        if (req.body instanceof Readable) req.body.resume();
        return Promise.reject(invalid("version", wrong));
      }
      // A zip declared larger than the go command takes is refused before it is read.
      const declared = Number(req.headers["content-length"] ?? NaN);
      if (declared > MAX_ZIP_FILE) {
        if (req.body instanceof Readable) req.body.resume();
        return Promise.reject(new ServiceError("payload_too_large", `module zip file is too large (${declared} bytes; limit is ${MAX_ZIP_FILE} bytes, as the go command's)`));
      }
      // Stored by the file routes through the format's publish (go-registry.ts), which checks the zip.
      return undefined;
    }
    if (isRead) {
      if (r === undefined) return Promise.reject(notFound(`no GOPROXY path ${a.path}: a Go repository serves <module>/@v/list, <module>/@v/<version>.info, .mod, .zip and <module>/@latest`));
      return read(req, reply, a, r);
    }
    if (req.body instanceof Readable) req.body.resume();
    if (r && r.kind !== "invalid") return Promise.reject(notAllowed("GET, HEAD", `${a.path} (derived from the uploaded zip: upload <module>/@v/<version>.zip)`));
    if (r?.kind === "invalid") return Promise.reject(invalid("path", r.reason));
    return Promise.reject(notFound(`no GOPROXY path ${a.path}: upload a module version with PUT <module>/@v/<version>.zip`));
  };
}
