import { Readable } from "node:stream";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import send from "@fastify/send";
import { ServiceError, notFound } from "@svc/contracts";
import { parseArtifactTarget, parseArtifactUrl, type ArtifactTarget } from "@svc/grants";
import { declaredContentType, senderWentAway, setContentTypeAside, watchBodyIdle } from "@svc/kit";
import { actorOf, type ArtifactService } from "../domain/artifact-service.js";
import type { DownloadRecorder } from "../domain/download-recorder.js";
import { parseDeclaredDigests, parsePreconditions } from "../domain/upload-checks.js";
import type { FileStore } from "../store/file-store.js";
import type { Formats } from "../formats/format.js";
import { readSmallFile } from "./small-file.js";

export interface RawRoutesDeps {
  files: FileStore;
  artifacts: ArtifactService;
  downloads: Pick<DownloadRecorder, "record">;
  /** Names of the repositories this service serves. */
  repositories: () => ReadonlySet<string>;
  /** svc.upload-idle-timeout; 0: never. */
  uploadIdleTimeoutMs: number;
  /**
   * Each repository's format: its protocol answers first (what it leaves, such as an npm tarball
   * download, is served here as a file), and it says how an upload is stored.
   */
  formats: Pick<Formats, "of">;
}

/**
 * Bytes read from a file per read, and written to the socket per write, while sending it (and
 * the most a download holds in memory here). Each chunk costs a trip to the thread pool, a
 * buffer and a write: at 256 KiB instead of 64 KiB this service spent about 0.6 instead of 1.0 ms
 * of CPU per MB sent; at 1 MiB, about 0.55 sent straight to a client and 0.57 instead of 0.70
 * when sending through the gateway, where it shares the two cores of the bench machine with two
 * more busy processes and every thread-pool trip is a context switch (bench/README.md).
 */
const READ_CHUNK = 1024 * 1024;

/** How much longer than svc.upload-idle-timeout this service waits, at most, before cutting an upload. */
const IDLE_GRACE_MS = 5_000;

/** A declared Content-Type worth recording: a well-formed media type, else nothing. */
const MEDIA_TYPE = /^[\w!#$%&'*+.^`|~-]+\/[\w!#$%&'*+.^`|~-]+(\s*;.*)?$/;
const mediaType = (declared: string | undefined): string | null => (declared !== undefined && declared.length <= 255 && MEDIA_TYPE.test(declared.trim()) ? declared.trim() : null);

/**
 * Raw repositories: `/repository/<repository>/<path>` with GET, HEAD, PUT and DELETE. A
 * repository of another format answers its own protocol first (`formatted`); what it leaves
 * (an npm tarball download) is served as a file.
 */
export function rawRoutes(app: FastifyInstance, deps: RawRoutesDeps): void {
  const address = (req: FastifyRequest): ArtifactTarget => {
    const a = parseArtifactTarget(req.url);
    // Only a format that serves folders (PyPI: its index pages, its upload URL) is asked about one; elsewhere a folder is refused as it always was.
    if (a.folder && !deps.formats.of(a.repository)?.servesFolders) parseArtifactUrl(req.url);
    if (!deps.repositories().has(a.repository)) throw notFound(`no repository named ${a.repository}`);
    return a;
  };
  const formatted = (req: FastifyRequest, reply: FastifyReply, a: ArtifactTarget): Promise<unknown> | undefined => deps.formats.of(a.repository)?.handle?.(req, reply, a);

  /** A body that stops arriving is cut, after the gateway (which sees the client first) had its chance. */
  const watchIdle = (req: FastifyRequest, reply: FastifyReply, a: ArtifactTarget) => {
    const idle = deps.uploadIdleTimeoutMs;
    watchBodyIdle(req, reply, idle + Math.min(idle, IDLE_GRACE_MS), () => {
      req.log.warn({ repository: a.repository, path: a.path, principal: req.principal.id }, "cut an upload that stopped arriving (svc.upload-idle-timeout)");
      req.raw.destroy(new ServiceError("request_timeout", "the upload stopped arriving (svc.upload-idle-timeout): nothing was stored"));
    });
  };

  app.register(async (scoped) => {
    // Bodies stream straight to the store: no parsing, no size limit, never held in memory,
    // whatever Content-Type they declare (even one fastify cannot parse). The body is the
    // payload fastify hands over: it fails at its end unless it is the one the gateway signed
    // (createBaseApp), before the store commits it.
    scoped.removeAllContentTypeParsers();
    // A multipart body (twine's upload form) too: a PyPI upload reads it part by part from that
    // payload, streaming the file (routes/upload-form.ts).
    scoped.addContentTypeParser("*", (_req, payload, done) => done(null, payload));
    scoped.addHook("onRequest", (req, _reply, done) => {
      if (req.method !== "GET" && req.method !== "HEAD") setContentTypeAside(req);
      done();
    });

    const read = async (req: FastifyRequest, reply: FastifyReply) => {
      const a = address(req);
      const own = formatted(req, reply, a);
      if (own) return own;
      if (req.method === "GET") {
        const small = readSmallFile(deps.files.fileOf(a.repository, a.segments), req.headers);
        if (small) {
          deps.downloads.record(a.repository, a.path);
          return reply.code(200).headers(small.headers).send(small.body);
        }
      }
      const encoded = a.segments.map(encodeURIComponent).join("/");
      const r = await send(req.raw, encoded, {
        root: deps.files.repoDir(a.repository),
        dotfiles: "allow",
        index: false,
        cacheControl: false,
        acceptRanges: true,
        etag: true,
        lastModified: true,
        // Unset, @fastify/send passes `highWaterMark: null` to fs.createReadStream, which then reads
        // 16 KiB at a time instead of its 64 KiB default: four times the reads and writes per file.
        highWaterMark: READ_CHUNK,
      });
      if (r.type === "directory" || (r.type === "error" && r.statusCode === 404)) throw notFound(`no artifact at ${a.repository}/${a.path}`);
      if (r.type === "error" && r.statusCode >= 500) throw r.metadata.error;
      // @fastify/send's own refusals come with an HTML page: ours are in the caller's format.
      if (r.type === "error" && r.statusCode === 412) throw new ServiceError("precondition_failed", "the artifact does not match If-Match or has changed since If-Unmodified-Since");
      if (r.type === "error" && r.statusCode === 416) {
        const range = r.headers["Content-Range"] ?? r.headers["content-range"];
        throw new ServiceError("range_not_satisfiable", "the requested range is not within the artifact", typeof range === "string" ? { headers: { "content-range": range } } : {});
      }
      // Counted in memory and written in batches (retention's "not downloaded for").
      if (req.method === "GET" && (r.statusCode === 200 || r.statusCode === 206)) deps.downloads.record(a.repository, a.path);
      reply.code(r.statusCode).headers(r.headers);
      return reply.send(r.stream);
    };
    scoped.route({ method: ["GET", "HEAD"], url: "/repository/*", exposeHeadRoute: false, handler: read });

    scoped.put("/repository/*", async (req, reply) => {
      const a = address(req);
      const own = formatted(req, reply, a);
      if (own) return own;
      const checks = { preconditions: parsePreconditions(req.headers), digests: parseDeclaredDigests(req.headers) };
      watchIdle(req, reply, a);
      // Durable (file, metadata and outbox row committed) before we answer; the event follows from the outbox.
      const body = req.body instanceof Readable ? req.body : req.raw;
      const publish = deps.formats.of(a.repository)?.publish ?? deps.artifacts.publish;
      const result = await publish(a, body, mediaType(declaredContentType(req)), actorOf(req.principal), checks).catch((err: unknown) => {
        // The sender went away half-way (the gateway drops an upload its client abandoned): nothing
        // was stored and nobody is left to answer; not a failure of ours.
        if (!(err instanceof ServiceError) && senderWentAway(req.raw)) {
          req.log.info({ repository: a.repository, path: a.path }, "upload abandoned before its body ended: nothing stored");
          throw new ServiceError("invalid_input", "the request body ended early: nothing was stored");
        }
        throw err;
      });
      req.log.info({ repository: a.repository, path: a.path, size: result.size, principal: req.principal.id }, "artifact stored");
      reply.code(result.created ? 201 : 200).header("x-checksum-sha256", result.sha256);
      if (result.etag) reply.header("etag", result.etag);
      return { repository: a.repository, path: a.path, size: result.size, sha256: result.sha256 };
    });

    scoped.delete("/repository/*", async (req, reply) => {
      const a = address(req);
      const own = formatted(req, reply, a);
      if (own) return own;
      const removed = await deps.artifacts.remove(a, actorOf(req.principal));
      if (!removed) throw notFound(`no artifact at ${a.repository}/${a.path}`);
      req.log.info({ repository: a.repository, path: a.path, principal: req.principal.id }, "artifact removed");
      return reply.code(204).send();
    });

    scoped.route({
      method: ["POST", "PATCH", "OPTIONS"],
      url: "/repository/*",
      handler: async (req, reply) => {
        const a = address(req);
        // twine's upload form streams to the store like a PUT, and is cut like one when it stalls.
        if (req.method === "POST") watchIdle(req, reply, a);
        const own = formatted(req, reply, a);
        if (own) return own;
        throw new ServiceError("method_not_allowed", "raw repositories take GET, HEAD, PUT and DELETE", { headers: { allow: "GET, HEAD, PUT, DELETE" } });
      },
    });
  });
}
