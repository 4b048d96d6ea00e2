import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { BlobStore } from "@svc/blobs";
import { MOUNT_SOURCE_HEADER, ServiceError } from "@svc/contracts";
import { declaredContentType, hasRequestBody, readWhole, setContentTypeAside, type ServiceApp } from "@svc/kit";
import { actorOf, type Address, type ArtifactService, type StoredContent } from "../../domain/artifact-service.js";
import { answerArtifact, type ByteRedirect } from "../../routes/artifact-answer.js";
import type { MetadataStore } from "../../store/metadata-store.js";
import { OciError, ociErrorHandler } from "./oci-errors.js";
import { lockAndRecordReferences, referencesOf } from "./oci-gc.js";
import { OCI_INDEX, OCI_MANIFEST, parseManifest } from "./oci-manifest.js";
import { digestOrRefuse, isName, isTag, parseDigest, parseOciRoute, type Digest, type OciRoute } from "./oci-path.js";
import { UPLOAD_IDLE_MS, type OciStore, type UploadSession } from "./oci-store.js";
import { checkChunk, conflictingChunk, planChunk, rangeOf, requireDigest } from "./oci-upload-plan.js";

export interface OciRoutesDeps {
  store: OciStore;
  artifacts: ArtifactService;
  metadata: Pick<MetadataStore, "find">;
  blobs: Pick<BlobStore, "get" | "head" | "readSmall" | "put">;
  formatOf: (repository: string) => string | undefined;
  /** svc.storage.s3.redirect: a blob GET answered with a signed URL of the bucket (as distribution's S3 driver does); manifests are always answered here. */
  redirect?: ByteRedirect;
}

/** The largest manifest accepted (distribution's limit). */
const MANIFEST_LIMIT = 4 * 1024 * 1024;
/** Most tags or catalog entries one page answers. */
const PAGE_MAX = 1000;
/** The field a declared digest's mismatch is reported under (artifacts.publish's digest check). */
const DIGEST_FIELD = "digest";

type Query = Record<string, string | undefined>;
const query = (req: FastifyRequest): Query => (req.query ?? {}) as Query;
const bodyOf = (req: FastifyRequest): Readable => (req.body instanceof Readable ? req.body : req.raw);

/** Where an image's blob or manifest sits in the path index: `<name>/blobs/<digest>`, `<name>/manifests/<digest>`. */
export function ociAddress(repository: string, name: string, kind: "blobs" | "manifests", digest: string): Address {
  const segments = [...name.split("/"), kind, digest];
  return { repository, segments, path: segments.join("/") };
}

/** A tag of a repository with immutable tags (PUT /api/repositories/<name>/oci), refused a move or a removal. */
const immutableTag = (r: { repository: string; name: string }, tag: string, what: string) =>
  new OciError("DENIED", `tags of ${r.repository} are immutable: ${r.name}:${tag} ${what}`);

const imageUrl = (r: { repository: string; name: string }) => `/v2/${r.repository}/${r.name}`;

function pageSize(q: Query): number {
  if (q.n === undefined) return PAGE_MAX;
  const n = Number(q.n);
  if (!Number.isSafeInteger(n) || n < 0) throw new OciError("UNSUPPORTED", "n must be a whole number", { status: 400 });
  return Math.min(n, PAGE_MAX);
}

/**
 * The OCI distribution API (v1.1) at `/v2/` (docs/integration/oci.md): blobs and their uploads,
 * manifests by tag and digest, tags, the catalog and referrers. Bytes and index rows go through
 * the artifact service like every other format's (events, holds, retention, reclaim); the
 * format's own rows (oci-store.ts) say what a manifest is and which tag names which.
 */
export function ociRoutes(app: ServiceApp, deps: OciRoutesDeps): void {
  const { store, artifacts, metadata, blobs } = deps;

  /** The repository must be an OCI one; anything else is NAME_UNKNOWN, as a registry says of a name it lacks. */
  const known = (r: OciRoute) => {
    if (deps.formatOf(r.repository) !== "oci") throw new OciError("NAME_UNKNOWN", `no OCI repository named ${r.repository}`);
  };

  /** Stores a blob under its image, its content checked against `digest` while it streams (or by the digest of content stored already). */
  const publishBlob = async (req: FastifyRequest, r: { repository: string; name: string }, digest: Digest, source: Readable | StoredContent) => {
    const a = ociAddress(r.repository, r.name, "blobs", digest.text);
    try {
      await artifacts.publish(a, source, "application/octet-stream", actorOf(req.principal), { digests: { [digest.algorithm]: [{ hex: digest.hex, header: DIGEST_FIELD }] } });
    } catch (err) {
      if (err instanceof ServiceError && err.code === "invalid_input" && err.field === DIGEST_FIELD) {
        throw new OciError("DIGEST_INVALID", `the content uploaded does not have the digest ${digest.text}: nothing was stored`);
      }
      throw err;
    }
  };

  /**
   * A cross-repository mount: the image gets the source's blob without its bytes moving (an
   * index row naming the blob already stored, under the blob's lock so a reclaim cannot take it
   * meanwhile). Only from the source the gateway found the caller may read (the signed
   * MOUNT_SOURCE_HEADER equals `from`), and only when the source holds the blob; otherwise
   * undefined, and the caller gets a plain upload. One that would take the image's repository
   * over its storage quota is refused as the blob's push would be.
   */
  const mount = async (req: FastifyRequest, r: { repository: string; name: string }, mountDigest: string, from: string): Promise<string | undefined> => {
    if (req.headers[MOUNT_SOURCE_HEADER] !== from) return undefined;
    const digest = parseDigest(mountDigest);
    const slash = from.indexOf("/");
    if (!digest || slash <= 0) return undefined;
    const source = { repository: from.slice(0, slash), name: from.slice(slash + 1) };
    if (!isName(source.name) || deps.formatOf(source.repository) !== "oci") return undefined;
    const row = await metadata.find(source.repository, ociAddress(source.repository, source.name, "blobs", digest.text).path);
    if (!row) return undefined;
    const present = async () => {
      if (!(await blobs.head(row.sha256))) throw new OciError("BLOB_UNKNOWN", "the source blob is gone");
    };
    try {
      // Counted against the image's repository's quota as a push of the blob would be (a refusal: SIZE_INVALID, 413).
      const outcome = await artifacts.indexFound(ociAddress(r.repository, r.name, "blobs", digest.text), { sha256: row.sha256, size: row.size, at: new Date() }, present, { quota: true });
      return outcome === "missing" ? undefined : digest.text;
    } catch (err) {
      if (err instanceof OciError) return undefined;
      throw err;
    }
  };

  const blobStored = (reply: FastifyReply, r: { repository: string; name: string }, digest: string) =>
    reply.code(201).headers({ location: `${imageUrl(r)}/blobs/${digest}`, "docker-content-digest": digest, "content-length": "0" }).send();

  const uploadAnswer = (reply: FastifyReply, s: UploadSession, status: 202 | 204) =>
    reply
      .code(status)
      .headers({ location: `${imageUrl(s)}/blobs/uploads/${s.id}`, range: rangeOf(s.size), "docker-upload-uuid": s.id, "content-length": "0" })
      .send();

  const session = async (r: Extract<OciRoute, { kind: "upload" }>) => {
    const s = await store.upload(r.id);
    if (!s || s.repository !== r.repository || s.name !== r.name) throw new OciError("BLOB_UPLOAD_UNKNOWN", `no upload ${r.id} in ${r.repository}/${r.name}`);
    if (s.idleMs > UPLOAD_IDLE_MS) {
      await store.endUpload(s.id);
      throw new OciError("BLOB_UPLOAD_UNKNOWN", `the upload ${r.id} was idle for more than ${UPLOAD_IDLE_MS / 60_000} minutes and has ended: start it again`);
    }
    return s;
  };

  /** A chunk (PATCH, or the body of the closing PUT): streamed into the store, then appended if the session still ends where it began. */
  const appendChunk = async (req: FastifyRequest, s: UploadSession): Promise<UploadSession> => {
    const h = req.headers;
    const plan = planChunk(s.size, h["content-range"], h["content-length"]);
    const chunk = await blobs.put(bodyOf(req));
    checkChunk(plan, chunk.size, s.size);
    const appended = await store.appendChunk(s.id, plan.start, chunk);
    if (!appended) throw new OciError("BLOB_UPLOAD_UNKNOWN", `the upload ${s.id} ended meanwhile`);
    if (appended.conflict) throw conflictingChunk(plan.start, appended.session.size);
    return appended.session;
  };

  const chunkGone = (id: string) => new OciError("BLOB_UPLOAD_INVALID", `a chunk of upload ${id} is no longer stored (the upload was idle too long): start it again`);

  /**
   * The whole blob of a session. Its one chunk when that is the blob (what skopeo, podman and a
   * monolithic PUT send: a PATCH or a PUT with the whole body, whose SHA-256 the store computed
   * as it stored it): published as it is, not read and written again. Else the chunks in order,
   * read from the store one after another, streamed.
   */
  const assembled = async (id: string, digest: Digest): Promise<Readable | StoredContent> => {
    const chunks = await store.chunks(id);
    const only = chunks.length === 1 ? chunks[0]! : undefined;
    if (only && digest.algorithm === "sha256" && only.sha256 === digest.hex) return { stored: { sha256: only.sha256, size: only.size }, gone: () => chunkGone(id) };
    return Readable.from(
      (async function* () {
        for (const c of chunks) {
          const part = await blobs.get(c.sha256);
          // Reclaimed: the session was idle past UPLOAD_IDLE_MS meanwhile, and its chunks no longer held.
          if (!part) throw chunkGone(id);
          yield* part;
        }
      })(),
    );
  };

  const blob = async (req: FastifyRequest, reply: FastifyReply, r: Extract<OciRoute, { kind: "blob" }>) => {
    const a = ociAddress(r.repository, r.name, "blobs", r.digest.text);
    if (req.method === "DELETE") {
      if (!(await artifacts.remove(a, actorOf(req.principal)))) throw new OciError("BLOB_UNKNOWN", `no blob ${r.digest.text} in ${r.repository}/${r.name}`);
      return reply.code(202).send();
    }
    if (req.method !== "GET" && req.method !== "HEAD") throw new OciError("UNSUPPORTED", `${req.method} is not served on a blob`);
    const row = await metadata.find(r.repository, a.path);
    if (!row) throw new OciError("BLOB_UNKNOWN", `no blob ${r.digest.text} in ${r.repository}/${r.name}`);
    reply.header("docker-content-digest", r.digest.text);
    await answerArtifact(req, reply, row, blobs, "application/octet-stream", deps.redirect);
    return reply;
  };

  const uploads = async (req: FastifyRequest, reply: FastifyReply, r: Extract<OciRoute, { kind: "uploads" }>) => {
    if (req.method !== "POST") throw new OciError("UNSUPPORTED", `${req.method} is not served on ${imageUrl(r)}/blobs/uploads/`);
    const q = query(req);
    if (q.digest !== undefined) {
      // Single-shot: the whole blob in the POST.
      const digest = digestOrRefuse(q.digest);
      await publishBlob(req, r, digest, bodyOf(req));
      return blobStored(reply, r, digest.text);
    }
    if (q.mount !== undefined && q.from !== undefined) {
      const mounted = await mount(req, r, q.mount, q.from);
      if (mounted) return blobStored(reply, r, mounted);
    }
    // Anything else, a mount that cannot be made included, is a plain upload: the caller writes the blob itself.
    return uploadAnswer(reply, await store.startUpload(r.repository, r.name, UPLOAD_IDLE_MS), 202);
  };

  const upload = async (req: FastifyRequest, reply: FastifyReply, r: Extract<OciRoute, { kind: "upload" }>) => {
    const s = await session(r);
    switch (req.method) {
      case "GET":
        return uploadAnswer(reply, s, 204);
      case "DELETE":
        if (!(await store.endUpload(s.id))) throw new OciError("BLOB_UPLOAD_UNKNOWN", `no upload ${r.id}`);
        return reply.code(204).send();
      case "PATCH":
        return uploadAnswer(reply, await appendChunk(req, s), 202);
      case "PUT": {
        const digest = digestOrRefuse(requireDigest(query(req).digest));
        const done = hasRequestBody(req) ? await appendChunk(req, s) : s;
        await publishBlob(req, r, digest, await assembled(done.id, digest));
        await store.endUpload(done.id);
        return blobStored(reply, r, digest.text);
      }
      default:
        throw new OciError("UNSUPPORTED", `${req.method} is not served on an upload`);
    }
  };

  /** The digest a manifest reference names (a tag's, or the digest itself); undefined for a tag not set. */
  const resolve = async (r: Extract<OciRoute, { kind: "manifest" }>) => (parseDigest(r.reference) ? r.reference : await store.tag(r.repository, r.name, r.reference));

  const putManifest = async (req: FastifyRequest, reply: FastifyReply, r: Extract<OciRoute, { kind: "manifest" }>) => {
    const body = await readWhole(bodyOf(req), MANIFEST_LIMIT);
    if (!body) throw new OciError("SIZE_INVALID", `a manifest is at most ${MANIFEST_LIMIT} bytes`, { status: 413 });
    const m = parseManifest(body, declaredContentType(req));
    const named = parseDigest(r.reference);
    const algorithm = named?.algorithm ?? "sha256";
    const digest = `${algorithm}:${createHash(algorithm).update(body).digest("hex")}`;
    if (named && named.text !== digest) throw new OciError("DIGEST_INVALID", `the manifest's digest is ${digest}, not ${named.text}`);
    for (const b of m.blobs) {
      if (!(await metadata.find(r.repository, ociAddress(r.repository, r.name, "blobs", b).path))) {
        throw new OciError("MANIFEST_BLOB_UNKNOWN", `the manifest refers to blob ${b}, which ${r.repository}/${r.name} does not have: push it first`, { detail: { digest: b } });
      }
    }
    for (const c of m.manifests) {
      if (!(await store.manifest(r.repository, r.name, c))) {
        throw new OciError("MANIFEST_BLOB_UNKNOWN", `the index refers to manifest ${c}, which ${r.repository}/${r.name} does not have: push it first`, { detail: { digest: c } });
      }
    }
    const a = ociAddress(r.repository, r.name, "manifests", digest);
    const tag = named ? undefined : r.reference;
    const immutable = tag !== undefined && (await store.immutableTags(r.repository));
    await artifacts.publish(a, body, m.mediaType, actorOf(req.principal), {}, {
      run: async (tx) => {
        await store.recordManifest(tx, { repository: r.repository, name: r.name, digest, path: a.path, mediaType: m.mediaType, artifactType: m.artifactType, subject: m.subject, size: body.length, annotations: m.annotations });
        // Locks what it references and records it, in this transaction: garbage collection
        // either removed a blob first (refused here) or sees the reference (oci-gc.ts).
        const missing = await lockAndRecordReferences(tx, r.repository, r.name, a.path, referencesOf(m));
        if (missing !== undefined) {
          throw new OciError("MANIFEST_BLOB_UNKNOWN", `the manifest refers to ${missing}, which ${r.repository}/${r.name} does not have (any more): push it first`, { detail: { digest: missing } });
        }
        if (tag === undefined) return;
        const at = await store.setTag(tx, r.repository, r.name, tag, digest, immutable);
        if (at !== digest) throw immutableTag(r, tag, `names ${at}: it cannot be moved`);
      },
    });
    req.log.info({ repository: r.repository, name: r.name, digest, tag, principal: req.principal.id }, "manifest stored");
    if (m.subject) reply.header("oci-subject", m.subject);
    return reply.code(201).headers({ location: `${imageUrl(r)}/manifests/${digest}`, "docker-content-digest": digest, "content-length": "0" }).send();
  };

  const manifest = async (req: FastifyRequest, reply: FastifyReply, r: Extract<OciRoute, { kind: "manifest" }>) => {
    if (req.method === "PUT") return putManifest(req, reply, r);
    const unknown = () => new OciError("MANIFEST_UNKNOWN", `no manifest ${r.reference} in ${r.repository}/${r.name}`);
    if (req.method === "DELETE") {
      if (await store.immutableTags(r.repository)) {
        if (isTag(r.reference)) throw immutableTag(r, r.reference, "cannot be deleted");
        if (await store.tagged(r.repository, r.name, r.reference)) throw new OciError("DENIED", `tags of ${r.repository} are immutable: manifest ${r.reference} is tagged and cannot be deleted`);
      }
      if (isTag(r.reference)) {
        if (!(await store.deleteTag(r.repository, r.name, r.reference))) throw unknown();
      } else if (!(await artifacts.remove(ociAddress(r.repository, r.name, "manifests", r.reference), actorOf(req.principal)))) {
        throw unknown();
      }
      return reply.code(202).send();
    }
    if (req.method !== "GET" && req.method !== "HEAD") throw new OciError("UNSUPPORTED", `${req.method} is not served on a manifest`);
    const digest = await resolve(r);
    const row = digest === undefined ? undefined : await metadata.find(r.repository, ociAddress(r.repository, r.name, "manifests", digest).path);
    if (!row || digest === undefined) throw unknown();
    reply.header("docker-content-digest", digest);
    await answerArtifact(req, reply, row, blobs, row.contentType ?? OCI_MANIFEST);
    return reply;
  };

  const tags = async (req: FastifyRequest, reply: FastifyReply, r: Extract<OciRoute, { kind: "tags" }>) => {
    const q = query(req);
    const n = pageSize(q);
    const list = n === 0 ? [] : await store.tags(r.repository, r.name, q.last, n);
    if (!list) throw new OciError("NAME_UNKNOWN", `no image ${r.name} in ${r.repository}`);
    if (n > 0 && list.length === n) reply.header("link", `<${imageUrl(r)}/tags/list?n=${n}&last=${encodeURIComponent(list[list.length - 1]!)}>; rel="next"`);
    return reply.type("application/json").send({ name: `${r.repository}/${r.name}`, tags: list });
  };

  const referrers = async (req: FastifyRequest, reply: FastifyReply, r: Extract<OciRoute, { kind: "referrers" }>) => {
    const artifactType = query(req).artifactType;
    const rows = await store.referrers(r.repository, r.name, r.digest.text, artifactType);
    if (artifactType !== undefined) reply.header("oci-filters-applied", "artifactType");
    const manifests = rows.map((m) => ({
      mediaType: m.mediaType,
      digest: m.digest,
      size: m.size,
      ...(m.artifactType ? { artifactType: m.artifactType } : {}),
      ...(m.annotations ? { annotations: m.annotations } : {}),
    }));
    // A Buffer: fastify adds no charset to the media type.
    return reply.type(OCI_INDEX).send(Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: OCI_INDEX, manifests })));
  };

  app.register(async (scoped) => {
    // Bodies stream to the store (blobs) or are read here (manifests): never parsed by fastify,
    // whatever they declare. The body handed over fails at its end unless the gateway signed it.
    scoped.removeAllContentTypeParsers();
    scoped.addContentTypeParser("*", (_req, payload, done) => done(null, payload));
    scoped.addHook("onRequest", (req, reply, done) => {
      if (req.method !== "GET" && req.method !== "HEAD") setContentTypeAside(req);
      reply.header("docker-distribution-api-version", "registry/2.0");
      done();
    });
    scoped.setErrorHandler(ociErrorHandler);

    // The ping: the gateway let the caller in (an identified one, or anonymous reads granted).
    const ping = async (_req: FastifyRequest, reply: FastifyReply) => reply.type("application/json").send("{}");
    scoped.get("/v2/", ping);
    scoped.get("/v2", ping);

    scoped.get("/v2/_catalog", async (req, reply) => {
      const q = query(req);
      const n = pageSize(q);
      const list = n === 0 ? [] : await store.catalog(q.last, n);
      if (n > 0 && list.length === n) reply.header("link", `</v2/_catalog?n=${n}&last=${encodeURIComponent(list[list.length - 1]!)}>; rel="next"`);
      return reply.type("application/json").send({ repositories: list });
    });

    scoped.route({
      method: ["GET", "HEAD", "PUT", "POST", "PATCH", "DELETE"],
      url: "/v2/*",
      exposeHeadRoute: false,
      handler: async (req, reply) => {
        const r = parseOciRoute(req.url);
        known(r);
        switch (r.kind) {
          case "blob":
            return blob(req, reply, r);
          case "uploads":
            return uploads(req, reply, r);
          case "upload":
            return upload(req, reply, r);
          case "manifest":
            return manifest(req, reply, r);
          case "tags":
            return tags(req, reply, r);
          case "referrers":
            return referrers(req, reply, r);
        }
      },
    });
  });
}
