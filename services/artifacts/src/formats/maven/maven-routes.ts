import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "@sinclair/typebox";
import { ServiceError, invalid, notFound, LIMITS } from "@svc/contracts";
import type { ArtifactAddress } from "@svc/grants";
import { Answer, errorResponses, type ServiceApp } from "@svc/kit";
import { actorOf } from "../../domain/artifact-service.js";
import { parseMavenPath } from "./maven-layout.js";
import type { MavenRepository } from "./maven-repository.js";
import type { MavenProxy } from "./maven-proxy-service.js";
import { createHash } from "node:crypto";
import type { BlobStore } from "@svc/blobs";
import type { MetadataStore } from "../../store/metadata-store.js";
import { readBody } from "../../routes/request-body.js";
import { answerArtifact } from "../../routes/artifact-answer.js";

/** A format's handler answers; `undefined` leaves the request to the raw file routes (as npm-routes.ts). */
export type MavenHandler = (req: FastifyRequest, reply: FastifyReply, a: ArtifactAddress) => Promise<unknown> | undefined;

export interface MavenRoutesDeps {
  maven: MavenRepository;
  metadata: Pick<MetadataStore, "find">;
  blobs: Pick<BlobStore, "get" | "head" | "readSmall">;
  /** Proxy repositories (docs/integration/maven.md, "Proxy repositories"); `isProxy` says which repositories are proxies. */
  proxy?: { maven: Pick<MavenProxy, "metadata" | "file">; isProxy: (repository: string) => boolean };
}

/** Largest checksum and metadata uploads read (they are read whole). */
const MAX_CHECKSUM_BYTES = 4096;
const MAX_METADATA_BYTES = 1024 * 1024;

async function readText(req: FastifyRequest, max: number, what: string): Promise<string> {
  return (await readBody(req, max, () => new ServiceError("payload_too_large", `${what} may be at most ${max} bytes`))).toString("utf8");
}

const READS = "GET, HEAD";

/**
 * The Maven 2 layout of a `maven` repository, under `/repository/<repository>/`: the server's
 * own `maven-metadata.xml` and checksums, checksum and metadata uploads, file removals. File
 * downloads and uploads go through the raw file routes (uploads through MavenRepository.deploy).
 */
export function mavenHandler(deps: MavenRoutesDeps): MavenHandler {
  const { maven } = deps;
  return (req, reply, a) => {
    const p = parseMavenPath(a.segments);
    const read = req.method === "GET" || req.method === "HEAD";
    const text = (type: string, body: string) => {
      reply.type(type).header("content-length", Buffer.byteLength(body));
      return reply.send(req.method === "HEAD" ? undefined : body);
    };
    const proxy = deps.proxy?.isProxy(a.repository) ? deps.proxy.maven : undefined;
    if (proxy) {
      if (!read) {
        return Promise.reject(
          new ServiceError("method_not_allowed", `${a.repository} is a proxy repository: it serves what its upstream has and takes no deploys, checksums, metadata or removals; deploy to a hosted repository`, { headers: { allow: READS } }),
        );
      }
      if (p.kind === "metadata" || (p.kind === "checksum" && p.of[p.of.length - 1] === "maven-metadata.xml")) {
        return (async () => {
          const doc = await proxy.metadata(a.repository, p.kind === "metadata" ? p.dir : p.of.slice(0, -1));
          if (!doc) throw notFound(`no artifact at ${a.repository}/${a.path}`);
          reply.headers(doc.headers);
          // A checksum of the document as it is served here (versions hidden), not the upstream's.
          return p.kind === "metadata" ? text("application/xml", doc.body) : text("text/plain; charset=utf-8", createHash(p.algorithm).update(doc.body, "utf8").digest("hex"));
        })();
      }
      if (p.kind === "checksum") {
        return (async () => {
          // The file first (fetched and checked if need be): its checksums are the server's own, from the bytes it holds.
          const of = parseMavenPath(p.of);
          await proxy.file(a.repository, p.of.join("/"), of.kind === "file" ? of : undefined);
          const hex = await maven.checksumOf(a.repository, p.of, p.algorithm);
          if (hex === undefined) throw notFound(`no artifact at ${a.repository}/${p.of.join("/")}`);
          return text("text/plain; charset=utf-8", hex);
        })();
      }
      return undefined;
    }
    if (p.kind === "checksum") {
      if (read) {
        return (async () => {
          const hex = await maven.checksumOf(a.repository, p.of, p.algorithm);
          if (hex === undefined) throw notFound(`no artifact at ${a.repository}/${p.of.join("/")}`);
          return text("text/plain; charset=utf-8", hex);
        })();
      }
      if (req.method === "PUT") {
        return (async () => {
          await maven.checksum(a.repository, p.of, p.algorithm, await readText(req, MAX_CHECKSUM_BYTES, `a .${p.algorithm} file`));
          return reply.code(201).send();
        })();
      }
      return Promise.reject(new ServiceError("method_not_allowed", "checksums are the server's own, from the file they describe: they go with it", { headers: { allow: `${READS}, PUT` } }));
    }
    if (p.kind === "metadata") {
      if (read) {
        return (async () => {
          const doc = await maven.metadataAt(a.repository, p.dir);
          if (doc !== undefined) return text("application/xml", doc);
          // A group's plugin list, kept as a client sent it.
          const stored = await deps.metadata.find(a.repository, a.path);
          if (!stored) throw notFound(`no artifact at ${a.repository}/${a.path}`);
          await answerArtifact(req, reply, stored, deps.blobs, "application/xml");
          return reply;
        })();
      }
      if (req.method === "PUT") {
        return (async () => {
          const kept = await maven.metadata(a, p.dir, await readText(req, MAX_METADATA_BYTES, "maven-metadata.xml"), actorOf(req.principal));
          req.log.info({ repository: a.repository, path: a.path, kept, principal: req.principal.id }, "maven-metadata.xml received");
          return reply.code(201).send();
        })();
      }
      return Promise.reject(new ServiceError("method_not_allowed", "maven-metadata.xml is written by the server from the files deployed", { headers: { allow: `${READS}, PUT` } }));
    }
    if (p.kind === "file" && req.method === "DELETE") {
      return (async () => {
        if (!(await maven.remove(a, actorOf(req.principal)))) throw notFound(`no artifact at ${a.repository}/${a.path}`);
        req.log.info({ repository: a.repository, path: a.path, principal: req.principal.id }, "maven file removed");
        return reply.code(204).send();
      })();
    }
    return undefined;
  };
}

const nameParam = Type.Object({ name: Type.String({ minLength: 1, maxLength: LIMITS.repositoryName }) });
const optionsSchema = Type.Object(
  {
    releaseRedeploy: Type.Boolean({ description: "whether a release version's files may be deployed again (snapshots always may); false by default" }),
  },
  { additionalProperties: false },
);
const optionsAnswer = Answer(optionsSchema.properties);

export interface MavenOptionsRoutesDeps {
  maven: Pick<MavenRepository, "releaseRedeploy" | "setReleaseRedeploy">;
  formatOf: (repository: string) => string | undefined;
}

/** `/api/repositories/<name>/maven`: a maven repository's options, for administrators. */
export function mavenOptionsRoutes(app: ServiceApp, deps: MavenOptionsRoutesDeps): void {
  const maven = (name: string) => {
    const format = deps.formatOf(name);
    if (format === undefined) throw notFound(`no repository named ${name}`);
    if (format !== "maven") throw invalid("name", `repository ${name} has format ${format}: Maven options apply to maven repositories`);
  };
  app.get(
    "/api/repositories/:name/maven",
    { schema: { params: nameParam, response: { 200: optionsAnswer, ...errorResponses(400, 404) } } },
    async (req) => {
      maven(req.params.name);
      return { releaseRedeploy: await deps.maven.releaseRedeploy(req.params.name) };
    },
  );
  app.put(
    "/api/repositories/:name/maven",
    { schema: { params: nameParam, body: optionsSchema, response: { 200: optionsAnswer, ...errorResponses(400, 404, 413, 415) } } },
    async (req) => {
      maven(req.params.name);
      await deps.maven.setReleaseRedeploy(req.params.name, req.body.releaseRedeploy);
      req.log.info({ repository: req.params.name, releaseRedeploy: req.body.releaseRedeploy, principal: req.principal.id }, "maven options set");
      return { releaseRedeploy: req.body.releaseRedeploy };
    },
  );
}
