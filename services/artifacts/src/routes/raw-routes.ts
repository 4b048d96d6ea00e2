import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import send from "@fastify/send";
import { ServiceError, notFound } from "@svc/contracts";
import { parseArtifactUrl, type ArtifactAddress } from "@svc/grants";
import type { FileStore } from "../domain/file-store.js";
import type { MetadataStore } from "../store/metadata-store.js";

export interface RawRoutesDeps {
  files: FileStore;
  metadata: MetadataStore;
  /** Names of the repositories this service serves. */
  repositories: () => ReadonlySet<string>;
}

/** Raw repositories: `/repository/<repository>/<path>` with GET, HEAD, PUT and DELETE. */
export function rawRoutes(app: FastifyInstance, deps: RawRoutesDeps): void {
  const address = (req: FastifyRequest): ArtifactAddress => {
    const a = parseArtifactUrl(req.url);
    if (!deps.repositories().has(a.repository)) throw notFound(`no repository named ${a.repository}`);
    return a;
  };

  app.register(async (scoped) => {
    // Bodies stream straight to the store: no parsing, no size limit, never held in memory.
    scoped.removeAllContentTypeParsers();
    scoped.addContentTypeParser("*", (_req, _payload, done) => done(null));

    const read = async (req: FastifyRequest, reply: FastifyReply) => {
      const a = address(req);
      const encoded = a.segments.map(encodeURIComponent).join("/");
      const r = await send(req.raw, encoded, {
        root: deps.files.repoDir(a.repository),
        dotfiles: "allow",
        index: false,
        cacheControl: false,
        acceptRanges: true,
        etag: true,
        lastModified: true,
      });
      if (r.type === "directory" || (r.type === "error" && r.statusCode === 404)) throw notFound(`no artifact at ${a.repository}/${a.path}`);
      if (r.type === "error" && r.statusCode >= 500) throw r.metadata.error;
      reply.code(r.statusCode).headers(r.headers);
      return reply.send(r.stream);
    };
    scoped.route({ method: ["GET", "HEAD"], url: "/repository/*", exposeHeadRoute: false, handler: read });

    scoped.put("/repository/*", async (req, reply) => {
      const a = address(req);
      const result = await deps.files.write(a.repository, a.segments, req.raw);
      const contentType = typeof req.headers["content-type"] === "string" ? req.headers["content-type"] : null;
      await deps.metadata.recordArtifact({ repository: a.repository, path: a.path, size: result.size, sha256: result.sha256, contentType });
      req.log.info({ repository: a.repository, path: a.path, size: result.size, principal: req.principal.id }, "artifact stored");
      reply.code(result.created ? 201 : 200).header("x-checksum-sha256", result.sha256);
      return { repository: a.repository, path: a.path, size: result.size, sha256: result.sha256 };
    });

    scoped.delete("/repository/*", async (req, reply) => {
      const a = address(req);
      const removed = await deps.files.remove(a.repository, a.segments);
      if (!removed) throw notFound(`no artifact at ${a.repository}/${a.path}`);
      await deps.metadata.forgetArtifact(a.repository, a.path);
      req.log.info({ repository: a.repository, path: a.path, principal: req.principal.id }, "artifact removed");
      return reply.code(204).send();
    });

    scoped.route({
      method: ["POST", "PATCH", "OPTIONS"],
      url: "/repository/*",
      handler: async () => {
        throw new ServiceError("method_not_allowed", "raw repositories take GET, HEAD, PUT and DELETE", { headers: { allow: "GET, HEAD, PUT, DELETE" } });
      },
    });
  });
}
