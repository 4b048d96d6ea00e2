import { Readable } from "node:stream";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ServiceError, forbidden, notFound, type Actor } from "@svc/contracts";
import type { IndexRow } from "../store/index-changes.js";
import { parseArtifactTarget, parseArtifactUrl, type ArtifactTarget } from "@svc/grants";
import { declaredContentType, senderWentAway, setContentTypeAside, watchBodyIdle } from "@svc/kit";
import { actorOf, type ArtifactService } from "../domain/artifact-service.js";
import type { DownloadRecorder } from "../domain/download-recorder.js";
import { parseDeclaredDigests, parsePreconditions } from "../domain/upload-checks.js";
import type { BlobStore } from "@svc/blobs";
import type { IndexReadCache } from "../domain/index-read-cache.js";
import { CooldownRefusal, type Formats } from "../formats/format.js";
import { answerArtifact, answerLiveFile, takesLiveFile, type ByteRedirect } from "./artifact-answer.js";
import type { LiveFile } from "../proxy/file-fetch.js";
import { groupReadsFactory } from "./group-dispatch.js";
import type { GroupMember } from "../domain/repository-list.js";

export interface RawRoutesDeps {
  blobs: Pick<BlobStore, "get" | "head" | "readSmall">;
  /** The path index, through the read cache: what a path holds. */
  reads: Pick<IndexReadCache, "find" | "evict">;
  artifacts: ArtifactService;
  downloads: Pick<DownloadRecorder, "record">;
  /** Names of the repositories this service serves. */
  repositories: () => ReadonlySet<string>;
  /** A group repository's members in order; undefined for a hosted or proxy repository (routes/group-dispatch.ts). */
  membersOf?: (repository: string) => readonly GroupMember[] | undefined;
  /** svc.upload-idle-timeout; 0: never. */
  uploadIdleTimeoutMs: number;
  /**
   * Each repository's format: its protocol answers first (what it leaves, such as an npm tarball
   * download, is served here as a file), and it says how an upload is stored.
   */
  formats: Pick<Formats, "of">;
  /** svc.storage.s3.redirect: a GET's bytes come from the object store, through a signed URL. */
  redirect?: ByteRedirect;
  /** A read refused by the cooldown (a young version's file, directly or through a group): kept in the refusal log with who asked. */
  cooldownRefused?: (r: CooldownRefusal, actor: Actor) => Promise<void>;
}

/** How much longer than svc.upload-idle-timeout this service waits, at most, before cutting an upload. */
const IDLE_GRACE_MS = 5_000;

/** A declared Content-Type worth recording: a well-formed media type, else nothing. */
const MEDIA_TYPE = /^[\w!#$%&'*+.^`|~-]+\/[\w!#$%&'*+.^`|~-]+(\s*;.*)?$/;
const mediaType = (declared: string | undefined): string | null => (declared !== undefined && declared.length <= 255 && MEDIA_TYPE.test(declared.trim()) ? declared.trim() : null);

/** Why a held file (the screening gate's HOLD, or an administrator's) is not served until released: 403 with the reason. */
const heldRefusal = (a: ArtifactTarget, row: IndexRow) => forbidden(`${a.repository}/${a.path} is held and not served until an administrator releases it: ${row.heldReason}`);
function refuseHeld(a: ArtifactTarget, row: IndexRow): void {
  if (row.heldReason) throw heldRefusal(a, row);
}

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
  /**
   * A browser opening a folder of a format that serves none (a Maven group's folder): the
   * console's view of that folder, instead of the 400 a client gets for a path with an empty segment.
   */
  const folderPage = (req: FastifyRequest): string | undefined => {
    if (req.method !== "GET" || !/\btext\/html\b/.test(String(req.headers.accept ?? ""))) return undefined;
    const a = parseArtifactTarget(req.url);
    if (!a.folder || deps.formats.of(a.repository)?.servesFolders || !deps.repositories().has(a.repository)) return undefined;
    const path = a.path ? `?path=${encodeURIComponent(`${a.path}/`)}` : "";
    return `/ui/repositories/${encodeURIComponent(a.repository)}/browse${path}`;
  };
  const formatted = (req: FastifyRequest, reply: FastifyReply, a: ArtifactTarget): Promise<unknown> | undefined => deps.formats.of(a.repository)?.handle?.(req, reply, a);
  const groups = groupReadsFactory({ reads: deps.reads, formats: deps.formats, heldRefusal });
  /** The target a write acts on: a group's goes to its first hosted member (or is refused). */
  const writeTarget = (req: FastifyRequest): ArtifactTarget => {
    const a = address(req);
    const members = deps.membersOf?.(a.repository);
    return members ? groups.writeTarget(req.method, a, members) : a;
  };

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

    /** Sends the file `found` says `a` holds (a row read through the read cache), and counts the download. */
    const serve = async (req: FastifyRequest, reply: FastifyReply, a: ArtifactTarget, found: { row: IndexRow; cached: boolean }) => {
      refuseHeld(a, found.row);
      let status: number;
      try {
        status = await answerArtifact(req, reply, found.row, deps.blobs, undefined, deps.redirect);
      } catch (err) {
        // A cached row whose blob is gone: the path changed on another node a moment ago and
        // its event is still on its way. The index says what it holds now.
        if (!found.cached || !(err instanceof ServiceError) || err.code !== "not_found" || reply.sent) throw err;
        deps.reads.evict(a.repository, a.path);
        const fresh = await deps.reads.find(a.repository, a.path);
        if (!fresh.row) throw notFound(`no artifact at ${a.repository}/${a.path}`);
        refuseHeld(a, fresh.row);
        status = await answerArtifact(req, reply, fresh.row, deps.blobs, undefined, deps.redirect);
      }
      // Counted in memory and written in batches (retention's "not downloaded for"); a redirect to the object store counts.
      if (req.method === "GET" && (status === 200 || status === 206 || status === 307)) deps.downloads.record(a.repository, a.path, `${req.principal.kind}:${req.principal.id}`);
      return reply;
    };

    /** Sends a proxied file as it arrives from the upstream (counted as a download, as a stored file's is when its answer starts). */
    const serveLive = (req: FastifyRequest, reply: FastifyReply, a: ArtifactTarget, live: LiveFile) => {
      deps.downloads.record(a.repository, a.path, `${req.principal.kind}:${req.principal.id}`);
      return answerLiveFile(reply, a.path, live);
    };

    const read = async (req: FastifyRequest, reply: FastifyReply) => {
      const page = folderPage(req);
      if (page) return reply.code(303).header("location", page).send();
      const a = address(req);
      const members = deps.membersOf?.(a.repository);
      if (members) {
        // A group: its format's merged metadata, or the first member's file (counted as that member's download).
        const got = await groups.read(req, reply, a, members);
        if ("answered" in got) return got.answered;
        return "live" in got ? serveLive(req, reply, got.target, got.live) : serve(req, reply, got.target, got.found);
      }
      const own = formatted(req, reply, a);
      if (own) return own;
      // The index says what the path holds (through the read cache); the bytes are its blob's. A
      // proxy repository fetches from its upstream what it does not hold yet (a GET of the whole
      // file gets its bytes as they arrive), and serves what it holds as a hosted one does,
      // without asking Postgres first.
      let found = await deps.reads.find(a.repository, a.path);
      const fetch = found.row ? undefined : deps.formats.of(a.repository)?.beforeRead;
      if (fetch) {
        const live = await fetch(a, { live: takesLiveFile(req) });
        if (live) return serveLive(req, reply, a, live);
        found = await deps.reads.find(a.repository, a.path);
      }
      if (!found.row) throw notFound(`no artifact at ${a.repository}/${a.path}`);
      return serve(req, reply, a, { row: found.row, cached: found.cached });
    };
    const recorded = async (req: FastifyRequest, reply: FastifyReply) => {
      try {
        return await read(req, reply);
      } catch (err) {
        if (err instanceof CooldownRefusal && deps.cooldownRefused) await deps.cooldownRefused(err, actorOf(req.principal));
        throw err;
      }
    };
    scoped.route({ method: ["GET", "HEAD"], url: "/repository/*", exposeHeadRoute: false, handler: recorded });

    scoped.put("/repository/*", async (req, reply) => {
      const a = writeTarget(req);
      const own = formatted(req, reply, a);
      if (own) return own;
      const checks = { preconditions: parsePreconditions(req.headers), digests: parseDeclaredDigests(req.headers) };
      // A declared size over the repository's quota is refused before the body is read (the commit refuses it anyway).
      const declared = Number(req.headers["content-length"]);
      if (Number.isSafeInteger(declared) && declared > 0) await deps.artifacts.checkQuota(a.repository, declared, a.path);
      watchIdle(req, reply, a);
      // Durable (blob, index row and outbox row committed) before we answer; the event follows from the outbox.
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
      const a = writeTarget(req);
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
        const a = writeTarget(req);
        // twine's upload form streams to the store like a PUT, and is cut like one when it stalls.
        if (req.method === "POST") watchIdle(req, reply, a);
        const own = formatted(req, reply, a);
        if (own) return own;
        throw new ServiceError("method_not_allowed", "raw repositories take GET, HEAD, PUT and DELETE", { headers: { allow: "GET, HEAD, PUT, DELETE" } });
      },
    });
  });
}
