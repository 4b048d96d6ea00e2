import { Readable } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "@sinclair/typebox";
import { ServiceError, conflict, invalid, notFound, LIMITS } from "@svc/contracts";
import type { ArtifactTarget } from "@svc/grants";
import { declaredContentType, errorResponses, type ServiceApp } from "@svc/kit";
import { actorOf } from "../../domain/artifact-service.js";
import { HTML_TYPE, JSON_TYPE, isProjectName, negotiate, type ListedFile, normalizeProject, projectListHtml, projectListJson, projectPageHtml, projectPageJson } from "./pypi-index.js";
import type { PypiRegistry, UploadFields, Uploaded } from "./pypi-registry.js";
import type { PypiStore } from "./pypi-store.js";
import type { PypiProxy } from "./pypi-proxy-service.js";
import { readForm } from "../../routes/upload-form.js";

export interface PypiRoutesDeps {
  registry: PypiRegistry;
  /** A repository's projects and a project's files as its pages list them (a group's: its members' merged, formats/pypi/pypi-group.ts). */
  store: Pick<PypiStore, "projects"> & { files: (repository: string, project: string) => Promise<readonly ListedFile[]> };
  /** Proxy repositories (docs/integration/pypi.md, "Proxy repositories"): their pages come from their upstream. */
  proxy?: { pypi: Pick<PypiProxy, "page" | "projects">; isProxy: (repository: string) => boolean };
}

/** A PyPI handler answers; `undefined` leaves the request to the raw file routes (file downloads). */
export type PypiHandler = (req: FastifyRequest, reply: FastifyReply, a: ArtifactTarget) => Promise<unknown> | undefined;

/**
 * Limits of the upload form (docs/integration/pypi.md): one file (any size: it streams to the
 * store), and fields sized for core metadata, which twine sends one per field: 64 KiB each (a
 * whole license text fits), the description (the README, the one long field) 1 MiB, 2 MiB all
 * together; as many fields as the longest lists of classifiers and requirements take. A form
 * past a cap is refused with 413 once that field has arrived, and the rest of it is drained:
 * the service holds the 2 MiB of fields it keeps and at most 1 MiB of the field arriving,
 * however large the form is.
 */
const FORM_LIMITS = { files: 2, fields: 1000, fieldSize: 64 * 1024, longFields: { description: 1024 * 1024 }, fieldsSize: 2 * 1024 * 1024, parts: 1100 };

const isForm = (type: string): boolean => /^multipart\/form-data\s*;/i.test(type);

const notAllowed = (allow: string, what: string) => new ServiceError("method_not_allowed", `${what} takes ${allow} here`, { headers: { allow } });

/** What a proxy repository answers an upload: twine prints the status and this reason. */
const proxyRefusal = (repository: string) =>
  new ServiceError("method_not_allowed", `${repository} is a proxy repository: it serves what its upstream has and takes no uploads; upload to a hosted repository`, { headers: { allow: "GET, HEAD" } });

/**
 * The PyPI protocols of a `pypi` repository under `/repository/<repository>/`: twine's legacy
 * upload (`POST` of a `file_upload` form to the repository URL), the simple index (PEP 503
 * HTML, PEP 691 JSON by Accept) under `simple/`, and the files under `packages/`.
 */
export function pypiHandler(deps: PypiRoutesDeps): PypiHandler {
  const { registry, store } = deps;

  const upload = async (req: FastifyRequest, reply: FastifyReply, repository: string) => {
    registry.writable();
    const type = declaredContentType(req);
    if (type === undefined || !isForm(type) || !(req.body instanceof Readable)) throw invalid("body", "an upload is a multipart/form-data form with :action=file_upload (what twine sends)");
    // The form is read from the body fastify hands over, which is checked against the gateway's signature.
    const form = await readForm(req.body, type, FORM_LIMITS, "content", (fields: UploadFields & Record<string, string>, filename, file) => {
      const action = fields[":action"];
      if (action !== "file_upload") throw invalid(":action", action === undefined ? "the form has no :action field before its content: send :action=file_upload" : `:action=${action} is not served here: only file_upload`);
      return registry.upload(repository, registry.check(fields, filename), file, actorOf(req.principal));
    });
    const done: Uploaded | undefined = form.file;
    if (!done) throw invalid("content", "the form has no content file");
    req.log.info({ repository, project: done.project, version: done.version, file: done.filename, created: done.created, principal: req.principal.id }, done.created ? "pypi file uploaded" : "pypi file uploaded again, unchanged");
    // PyPI answers 200 either way; twine reads only the status.
    return reply.code(200).type("text/plain; charset=utf-8").send(done.created ? `uploaded ${done.filename}\n` : `${done.filename} is already here with the same content: nothing changed\n`);
  };

  const index = async (req: FastifyRequest, reply: FastifyReply, a: ArtifactTarget) => {
    const base = `/repository/${encodeURIComponent(a.repository)}/simple/`;
    const [, name, ...more] = a.segments;
    if (more.length > 0) throw notFound(`no index page ${a.path}`);
    const type = negotiate(req.headers.accept);
    reply.header("vary", "Accept").type(type === "text/html" ? "text/html; charset=utf-8" : type);
    const proxy = deps.proxy?.isProxy(a.repository) ? deps.proxy.pypi : undefined;
    if (name === undefined) {
      if (!a.folder) return reply.redirect(base, 301);
      const projects = proxy ? await proxy.projects(a.repository) : await store.projects(a.repository);
      return reply.send(type === JSON_TYPE ? projectListJson(projects) : projectListHtml(projects));
    }
    if (!isProjectName(name)) throw notFound(`no project ${name} in repository ${a.repository}`);
    const project = normalizeProject(name);
    // PEP 503: one URL per project, the normalised one, with its trailing slash.
    if (project !== name || !a.folder) return reply.redirect(`${base}${encodeURIComponent(project)}/`, 301);
    if (proxy) {
      const page = await proxy.page(a.repository, project, type);
      if (!page) throw notFound(`no project ${project} in repository ${a.repository} or its upstream`);
      return reply.headers(page.headers).send(page.body);
    }
    const files = await store.files(a.repository, project);
    if (files.length === 0) throw notFound(`no project ${project} in repository ${a.repository}`);
    return reply.send(type === JSON_TYPE ? projectPageJson(project, files) : projectPageHtml(project, files));
  };

  return (req, reply, a) => {
    const read = req.method === "GET" || req.method === "HEAD";
    const [first] = a.segments;
    if (first === undefined) {
      if (req.method === "POST" && deps.proxy?.isProxy(a.repository)) {
        // The form is drained, not read: twine is still sending it when the refusal goes out.
        if (req.body instanceof Readable) req.body.resume();
        return Promise.reject(proxyRefusal(a.repository));
      }
      if (req.method === "POST") return upload(req, reply, a.repository);
      return Promise.reject(
        read ? notFound(`this is a PyPI repository: pip's index is /repository/${a.repository}/simple/, twine uploads to /repository/${a.repository}/`) : notAllowed("POST", "a PyPI repository's URL"),
      );
    }
    if (first === "simple") return read ? index(req, reply, a) : Promise.reject(notAllowed("GET, HEAD", "the simple index"));
    if (first === "packages" && a.segments.length === 4 && !a.folder) {
      // Files are artifacts: served by the file routes, stored once by digest.
      if (read) return undefined;
      if (req.method === "DELETE") {
        return (async () => {
          if (!(await registry.remove(a.repository, a.path, actorOf(req.principal)))) throw notFound(`no file at ${a.path}`);
          req.log.info({ repository: a.repository, path: a.path, principal: req.principal.id }, "pypi file removed");
          return reply.code(204).send();
        })();
      }
      return Promise.reject(notAllowed("GET, HEAD, DELETE", "a PyPI file (upload with twine to the repository URL)"));
    }
    return Promise.reject(notFound(`no PyPI route ${a.path}: the index is under simple/, files under packages/`));
  };
}

const yankParams = Type.Object({ name: Type.String({ minLength: 1, maxLength: LIMITS.repositoryName }) });
const yankBody = Type.Object(
  {
    project: Type.String({ minLength: 1, maxLength: 200, description: "the project name, in any spelling PEP 503 normalises to it" }),
    version: Type.String({ minLength: 1, maxLength: 128 }),
    file: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: "one file of the version; every file of it when absent" })),
    yanked: Type.Boolean({ description: "true yanks (PEP 592: pip no longer picks it unless pinned exactly), false unyanks" }),
    reason: Type.Optional(Type.String({ maxLength: 1000 })),
  },
  { additionalProperties: false },
);
const yankAnswer = Type.Object({ files: Type.Array(Type.String(), { description: "the files whose yanked state was set" }) });

/** Yanking (PEP 592): twine has no command for it, so it is an admin route (manage:write at `*`). */
export function pypiAdminRoutes(app: ServiceApp, deps: { registry: PypiRegistry; formatOf: (repository: string) => string | undefined; isProxy?: (repository: string) => boolean }): void {
  app.post(
    "/api/repositories/:name/pypi/yank",
    { schema: { params: yankParams, body: yankBody, response: { 200: yankAnswer, ...errorResponses(400, 404, 409, 413, 415) } } },
    async (req) => {
      const repository = req.params.name;
      if (deps.formatOf(repository) !== "pypi") throw notFound(`no pypi repository named ${repository}`);
      // A proxy's pages carry its upstream's yanked state.
      if (deps.isProxy?.(repository)) throw conflict(`${repository} is a proxy repository: its files are yanked at its upstream`);
      const { project, version, file, yanked, reason } = req.body;
      const files = await deps.registry.yank(repository, project, version, yanked ? (reason ?? "") : null, file);
      req.log.info({ repository, project, version, files, yanked, principal: req.principal.id }, yanked ? "pypi files yanked" : "pypi files unyanked");
      return { files };
    },
  );
}
