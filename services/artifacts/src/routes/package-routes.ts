import { Type } from "@sinclair/typebox";
import { invalid, notFound, LIMITS } from "@svc/contracts";
import { Answer, Nullable, errorResponses, pagingQuerySchema, readLimit, readPaging, type ServiceApp } from "@svc/kit";
import type { Formats } from "../formats/format.js";
import type { BrowseStore } from "../store/browse-store.js";
import type { ArtifactRecord, MetadataStore } from "../store/metadata-store.js";

/**
 * Read-only views of a repository's content for the console (docs/administration/console.md,
 * "Repository views"): its packages and their versions as its format names them, one folder of
 * its paths, and a search of every repository by name. Like `/api/repositories/<name>/files`,
 * they need manage:read over `*` (the gateway's admission).
 */

/** The most index rows one packages answer reads: a repository with more lists the packages of its first paths (in byte order) only. */
export const SCAN_LIMIT = 100_000;
const SCAN_PAGE = 5_000;

const nameParam = Type.Object({ name: Type.String({ minLength: 1, maxLength: LIMITS.repositoryName }) });
const packagesQuery = Type.Object(
  { ...pagingQuerySchema.properties, q: Type.Optional(Type.String({ maxLength: 200, description: "only packages whose name holds this (any letter case)" })) },
  { additionalProperties: false },
);
const packageQuery = Type.Object({ name: Type.String({ minLength: 1, maxLength: LIMITS.artifactPath, description: "the package as its format names it: `@scope/name`, `group:artifact`, a PyPI project, an image" }) }, { additionalProperties: false });
const foldersQuery = Type.Object(
  { ...pagingQuerySchema.properties, path: Type.Optional(Type.String({ maxLength: LIMITS.artifactPath, description: "the folder (`org/example`, with or without a trailing slash); absent: the repository's top" })) },
  { additionalProperties: false },
);
const searchQuery = Type.Object(
  { q: Type.String({ minLength: 2, maxLength: 200, description: "a part of a file's path or a package's name (any letter case), two characters at least" }), limit: Type.Optional(Type.String({ description: "at most this many files (1-500, default 100)" })) },
  { additionalProperties: false },
);

const packageSummary = Answer({
  name: Type.String({ description: "the package as its format names it" }),
  versions: Type.Integer({ description: "how many versions the repository holds" }),
  latest: Type.String({ description: "the version published last" }),
  updated: Type.String({ format: "date-time", description: "when its newest file was stored" }),
});
const versionFile = Answer({ path: Type.String(), size: Type.Integer(), sha256: Type.String(), updated: Type.String({ format: "date-time" }), downloads: Type.Integer(), held: Nullable(Type.String()) });
const packageDetail = Answer({
  name: Type.String(),
  format: Type.String(),
  description: Nullable(Type.String()),
  readme: Nullable(Type.String({ description: "the readme as published (Markdown, not rendered): npm's latest version's" })),
  tags: Nullable(Type.Record(Type.String(), Type.String(), { description: "npm's dist-tags (tag to version), an OCI image's tags (tag to manifest digest); null: the format has none" })),
  versions: Type.Array(
    Answer({ version: Type.String(), published: Type.String({ format: "date-time" }), files: Type.Array(versionFile) }),
    { description: "newest first" },
  ),
});
const folderAnswer = Answer({
  path: Type.String({ description: "the folder, \"\" for the top or ending in /" }),
  entries: Type.Array(
    Answer({
      name: Type.String(),
      folder: Type.Boolean({ description: "true: a folder (open it with path=<path><name>/); false: a file at <path><name>" }),
      files: Type.Integer({ description: "files at or below it" }),
      bytes: Type.Integer(),
      updated: Type.String({ format: "date-time" }),
    }),
  ),
});
const searchAnswer = Type.Array(
  Answer({
    repository: Type.String(),
    format: Type.String(),
    path: Type.String(),
    size: Type.Integer(),
    updated: Type.String({ format: "date-time" }),
    package: Nullable(Answer({ name: Type.String(), version: Type.String() })),
  }),
);

export interface PackageRoutesDeps {
  metadata: Pick<MetadataStore, "browse" | "hasRepository" | "repositories">;
  browse: BrowseStore;
  formats: Pick<Formats, "of">;
}

interface Version {
  version: string;
  first: Date;
  files: ArtifactRecord[];
}

export function packageRoutes(app: ServiceApp, deps: PackageRoutesDeps): void {
  const known = async (repository: string) => {
    if (!(await deps.metadata.hasRepository(repository))) throw notFound(`no repository named ${repository}`);
  };

  /** Every package of `repository` (its first SCAN_LIMIT paths), by name, with its versions and their files. */
  const packagesOf = async (repository: string, only?: string): Promise<Map<string, Map<string, Version>>> => {
    const coordinates = deps.formats.of(repository)?.coordinates;
    const found = new Map<string, Map<string, Version>>();
    if (!coordinates) return found;
    let after: string | undefined;
    for (let read = 0; read < SCAN_LIMIT; read += SCAN_PAGE) {
      const rows = await deps.metadata.browse(repository, { after, limit: SCAN_PAGE });
      for (const row of rows) {
        const c = coordinates(row.path);
        if (!c || (only !== undefined && c.name !== only)) continue;
        const versions = found.get(c.name) ?? found.set(c.name, new Map()).get(c.name)!;
        const v = versions.get(c.version) ?? versions.set(c.version, { version: c.version, first: row.updated, files: [] }).get(c.version)!;
        v.files.push(row);
        if (row.updated < v.first) v.first = row.updated;
      }
      if (rows.length < SCAN_PAGE) break;
      after = rows[rows.length - 1]!.path;
    }
    return found;
  };

  app.get(
    "/api/repositories/:name/packages",
    {
      schema: {
        summary: `A repository's packages as its format names them (npm packages, Maven group:artifact, PyPI projects, images, crates, modules), in byte order of the name; a raw repository has none. Read from its first ${SCAN_LIMIT} paths`,
        params: nameParam,
        querystring: packagesQuery,
        response: { 200: Type.Array(packageSummary), ...errorResponses(400, 404) },
      },
    },
    async (req, reply) => {
      const { after, limit } = readPaging(req.query);
      await known(req.params.name);
      const q = req.query.q?.toLowerCase();
      const all = [...(await packagesOf(req.params.name))]
        .filter(([name]) => (after === undefined || name > after) && (!q || name.toLowerCase().includes(q)))
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      const page = all.slice(0, limit);
      if (all.length > limit) reply.header("x-next-cursor", page[page.length - 1]![0]);
      return page.map(([name, versions]) => {
        const newest = [...versions.values()].reduce((a, b) => (b.first > a.first ? b : a));
        const updated = [...versions.values()].flatMap((v) => v.files).reduce((a, f) => (f.updated > a ? f.updated : a), newest.first);
        return { name, versions: versions.size, latest: newest.version, updated: updated.toISOString() };
      });
    },
  );

  app.get(
    "/api/repositories/:name/package",
    {
      schema: {
        summary: "One package of a repository: its versions (newest first) with their files, and what its format knows besides (npm: dist-tags, description and readme; OCI: tags)",
        params: nameParam,
        querystring: packageQuery,
        response: { 200: packageDetail, ...errorResponses(400, 404) },
      },
    },
    async (req) => {
      await known(req.params.name);
      const name = req.query.name;
      const format = deps.formats.of(req.params.name);
      const [versions, about] = await Promise.all([packagesOf(req.params.name, name).then((m) => m.get(name)), format?.describe?.(req.params.name, name)]);
      if (!versions && !about) throw notFound(`repository ${req.params.name} holds no package named ${name}`);
      const published = about?.published ?? {};
      const list = [...(versions?.values() ?? [])]
        .map((v) => ({ ...v, at: published[v.version] ?? v.first }))
        .sort((a, b) => b.at.getTime() - a.at.getTime());
      const repo = (await deps.metadata.repositories()).find((r) => r.name === req.params.name);
      return {
        name,
        format: repo?.format ?? "",
        description: about?.description ?? null,
        readme: about?.readme ?? null,
        tags: about?.tags ?? null,
        versions: list.map((v) => ({
          version: v.version,
          published: v.at.toISOString(),
          files: v.files.map((f) => ({ path: f.path, size: f.size, sha256: f.sha256, updated: f.updated.toISOString(), downloads: f.downloads, held: f.heldReason })),
        })),
      };
    },
  );

  app.get(
    "/api/repositories/:name/folders",
    {
      schema: {
        summary: "One folder of a repository: the files and folders directly in it, in byte order of the name (a folder is never a path: it is this answer)",
        params: nameParam,
        querystring: foldersQuery,
        response: { 200: folderAnswer, ...errorResponses(400, 404) },
      },
    },
    async (req, reply) => {
      const { after, limit } = readPaging(req.query);
      const trimmed = (req.query.path ?? "").replace(/^\/+|\/+$/g, "");
      if (trimmed && trimmed.split("/").some((s) => s === "" || s === "." || s === "..")) throw invalid("path", "a folder path has no empty, '.' or '..' segments");
      const path = trimmed ? `${trimmed}/` : "";
      const entries = await deps.browse.folder(req.params.name, path, { after, limit: limit + 1 });
      if (entries.length === 0) await known(req.params.name);
      const page = entries.slice(0, limit);
      if (entries.length > limit) reply.header("x-next-cursor", page[page.length - 1]!.name);
      return { path, entries: page.map((e) => ({ ...e, updated: e.updated.toISOString() })) };
    },
  );

  app.get(
    "/api/search",
    {
      schema: {
        summary: "Files of every repository whose path holds the text (any letter case), by repository and path, each with the package and version it is",
        querystring: searchQuery,
        response: { 200: searchAnswer, ...errorResponses(400) },
      },
    },
    async (req) => {
      const limit = req.query.limit === undefined ? 100 : readLimit(req.query.limit);
      const formats = new Map((await deps.metadata.repositories()).map((r) => [r.name, r.format]));
      const found = await deps.browse.search(req.query.q, limit);
      return found.map((f) => {
        const c = deps.formats.of(f.repository)?.coordinates?.(f.path);
        return { repository: f.repository, format: formats.get(f.repository) ?? "", path: f.path, size: f.size, updated: f.updated.toISOString(), package: c ? { name: c.name, version: c.version } : null };
      });
    },
  );
}
