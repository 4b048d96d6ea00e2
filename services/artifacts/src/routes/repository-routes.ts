import { Type } from "@sinclair/typebox";
import { forbidden, invalid, notFound, LIMITS } from "@svc/contracts";
import { actorOf } from "../domain/artifact-service.js";
import type { RepositoryAdmin } from "../domain/repository-admin.js";
import { MAX_MEMBERS } from "../domain/group-members.js";
import type { Cooldown } from "../gate/cooldown.js";
import { repositoryGateSchema } from "../gate/cooldown-routes.js";
import type { Formats } from "../formats/format.js";
import type { RepositoryDetail } from "../store/metadata-store.js";
import { parseRetentionPolicy, retentionPolicySchema, type RetentionPolicy } from "../domain/retention-policy.js";
import type { MetadataStore } from "../store/metadata-store.js";
import { Answer, NoContent, Nullable, StringEnum, errorResponses, pagingQuerySchema, readPaging, type ServiceApp } from "@svc/kit";

const retention = Type.Unsafe<RetentionPolicy>(retentionPolicySchema);
const membersAnswer = Nullable(Type.Array(Type.String(), { description: "a group's members in the order they are asked; null for a hosted or proxy repository" }));
const membersField = Type.Array(Type.String({ minLength: 1, maxLength: LIMITS.repositoryName }), {
  maxItems: MAX_MEMBERS,
  description: "a group's members, hosted or proxy repositories of its format, in the order they are asked: a read is answered by the first that has the path, a publish goes to the first hosted one",
});
const quotaAnswer = Nullable(Type.Integer({ description: "the storage quota in bytes: a publish that would take usedBytes over it is refused (413); null: none" }));
const usedAnswer = Type.Integer({ description: "the bytes of the files the repository's index holds, as its quota counts them (each path counted, even where content is shared)" });
const quotaField = Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: "the storage quota in bytes, a positive whole number; null: none" });
const SCOPE_FROM_PATH =
  "true: a request without Service-Repository-Name is authorised against this repository (the one its path names) instead of `*`, so a key granted on this repository alone works with clients that cannot send the header (npm, pnpm, yarn, pip, twine); the header still wins when sent. Effective at once on every gateway";
const scopeAnswer = Type.Boolean({ description: SCOPE_FROM_PATH });
const scopeField = Type.Boolean({ description: `${SCOPE_FROM_PATH}; absent at creation: false` });
// Typed unknown: the store reads the policy column as JSON it does not look into.
const repositorySchema = Answer({
  name: Type.String(),
  format: Type.String(),
  created: Type.String({ format: "date-time" }),
  retention: Type.Unsafe<unknown>(Type.Union([Type.Null(), retention])),
  type: StringEnum(["hosted", "proxy", "group"] as const, { description: "hosted: clients publish to it; proxy: a cache of its upstream; group: its members behind one URL" }),
  upstream: Nullable(Type.Object({ url: Type.String() }, { description: "a proxy's upstream (its credentials are never shown)" })),
  members: membersAnswer,
  quotaBytes: quotaAnswer,
  usedBytes: usedAnswer,
  scopeFromPath: scopeAnswer,
});
const nameParam = Type.Object({ name: Type.String({ minLength: 1, maxLength: LIMITS.repositoryName }) });
/** A repository's name and one of the format table's names (formats/index.ts). */
const createBodyOf = (formats: Pick<Formats, "names" | "description" | "optionFields">) =>
  Type.Object(
    {
      ...optionProperties(formats),
      name: Type.String({ minLength: 1, maxLength: LIMITS.repositoryName }),
      format: StringEnum(formats.names, { description: formats.description }),
      type: Type.Optional(Type.String({ description: "hosted (the default), proxy or group" })),
      members: Type.Optional(membersField),
      upstream: Type.Optional(
        Type.Unknown({ description: 'a proxy\'s upstream: {"url", "credentials"?: {"username","password"} or {"token"}}; https on a public address unless svc.block-private-import-hosts is false' }),
      ),
      quotaBytes: Type.Optional(quotaField),
      scopeFromPath: Type.Optional(scopeField),
    },
    { additionalProperties: false },
  );
const detailSchema = Answer({
  name: Type.String(),
  format: Type.String(),
  created: Type.String({ format: "date-time" }),
  type: StringEnum(["hosted", "proxy", "group"] as const),
  upstream: Nullable(Type.Object({ url: Type.String() }, { description: "a proxy's upstream (its credentials are never shown)" })),
  members: membersAnswer,
  artifacts: Type.Integer({ description: "artifacts the repository holds" }),
  bytes: Type.Integer({ description: "their total size (content shared with other paths counted at each)" }),
  quotaBytes: quotaAnswer,
  usedBytes: usedAnswer,
  scopeFromPath: scopeAnswer,
  gate: Type.Optional(repositoryGateSchema),
});
const deleteQuery = Type.Object({ force: Type.Optional(StringEnum(["true", "false"] as const)) }, { additionalProperties: false });
const kindOf = (type: string): "hosted" | "proxy" | "group" => (type === "proxy" ? "proxy" : type === "group" ? "group" : "hosted");
const upstreamOf = (r: { type: string; upstreamUrl: string | null }) => ({ type: kindOf(r.type), upstream: r.upstreamUrl ? { url: r.upstreamUrl } : null });
const detail = ({ upstreamUrl: _u, groups: _g, ...r }: RepositoryDetail) => ({ ...r, ...upstreamOf({ type: r.type, upstreamUrl: _u }), created: r.created.toISOString() });
const formatSchema = Answer({
  name: Type.String({ description: "the name a repository is created with (format of POST /api/repositories)" }),
  label: Type.String({ description: "the name with what it serves, as people read it" }),
  proxy: Type.Boolean({ description: "whether its repositories may be proxies; every format may have groups" }),
});
/** The formats' per-repository options (FormatModule.options) as optional body or answer fields. */
const optionProperties = (formats: Pick<Formats, "optionFields">) => Object.fromEntries([...formats.optionFields].map(([field, o]) => [field, Type.Optional(o.schema)]));
const patchBodyOf = (formats: Pick<Formats, "optionFields">) => Type.Object({ quotaBytes: Type.Optional(quotaField), scopeFromPath: Type.Optional(scopeField), ...optionProperties(formats) }, { additionalProperties: false, minProperties: 1 });
const membersBody = Type.Object({ members: membersField }, { additionalProperties: false });

const fileSchema = Answer({
  path: Type.String(),
  size: Type.Integer(),
  sha256: Type.String(),
  contentType: Nullable(Type.String()),
  updated: Type.String(),
  lastDownloaded: Nullable(Type.String()),
  downloads: Type.Integer(),
  held: Nullable(Type.String({ description: "why a policy holds the file; null when not held" })),
});
const filesQuery = Type.Object(
  { ...pagingQuerySchema.properties, prefix: Type.Optional(Type.String({ maxLength: LIMITS.artifactPath, description: "only paths starting with this (no leading slash needed)" })) },
  { additionalProperties: false },
);

export interface RepositoryRoutesDeps {
  metadata: Pick<MetadataStore, "repositories" | "retention" | "setRetention" | "browse" | "hasRepository">;
  admin: RepositoryAdmin;
  formats: Pick<Formats, "names" | "description" | "catalog" | "optionFields" | "of">;
  /** The screening gate's per-repository settings (the cooldown's minimum age), shown with the repository. */
  gate?: { cooldown?: Pick<Cooldown, "repositoryGate"> };
}

/**
 * Repository configuration the artifacts service owns. `/api/repositories/...` is for
 * administrators through the gateway (manage:read / manage:write at `*`);
 * `/internal/repositories/...` is the same for the walker, signed as a system principal.
 */
export function repositoryRoutes(app: ServiceApp, deps: RepositoryRoutesDeps): void {
  const { metadata } = deps;
  const createBody = createBodyOf(deps.formats);
  const patchBody = patchBodyOf(deps.formats);
  const detailAnswer = Answer({ ...detailSchema.properties, ...optionProperties(deps.formats) });
  /** The format options `body` gives; a field of another format than `format` is refused before anything changes. */
  const optionsIn = (body: Record<string, unknown>, format: string): Record<string, unknown> => {
    const given: Record<string, unknown> = {};
    for (const [field, o] of deps.formats.optionFields) {
      if (body[field] === undefined) continue;
      if (o.format !== format) throw invalid(field, `${field} applies to ${o.format} repositories, not to a ${format} one`);
      given[field] = body[field];
    }
    return given;
  };
  /** A repository's detail with its format's options. */
  const withOptions = async <T extends { name: string }>(r: T): Promise<T> => {
    const options = deps.formats.of(r.name)?.options;
    return options ? { ...r, ...(await options.get(r.name)) } : r;
  };

  app.get(
    "/api/formats",
    { schema: { summary: "The formats repositories may be created with, in the server's order", response: { 200: Type.Array(formatSchema), ...errorResponses() } } },
    async () => [...deps.formats.catalog()],
  );

  app.get(
    "/api/repositories",
    { schema: { querystring: pagingQuerySchema, response: { 200: Type.Array(repositorySchema), ...errorResponses(400) } } },
    async (req, reply) => {
      const { after, limit } = readPaging(req.query);
      const all = (await metadata.repositories()).filter((r) => after === undefined || r.name > after);
      const page = all.slice(0, limit);
      if (all.length > limit) reply.header("x-next-cursor", page[page.length - 1]!.name);
      return page.map(({ upstreamUrl, ...r }) => ({ ...r, ...upstreamOf({ type: r.type, upstreamUrl }), created: r.created.toISOString() }));
    },
  );

  app.post(
    "/api/repositories",
    { schema: { body: createBody, response: { 201: detailAnswer, ...errorResponses(400, 409, 413, 415) } } },
    async (req, reply) => {
      const options = optionsIn(req.body as Record<string, unknown>, req.body.format);
      const r = await deps.admin.create(req.body.name, req.body.format, { type: req.body.type, upstream: req.body.upstream, members: req.body.members, quotaBytes: req.body.quotaBytes, scopeFromPath: req.body.scopeFromPath });
      req.log.info({ repository: r.name, format: r.format, type: r.type, upstream: r.upstreamUrl ? new URL(r.upstreamUrl).origin : undefined, members: r.members ?? undefined, quotaBytes: r.quotaBytes ?? undefined, scopeFromPath: r.scopeFromPath || undefined, principal: req.principal.id }, "repository created");
      if (Object.keys(options).length > 0) {
        await deps.formats.of(r.name)?.options?.set(r.name, options);
        req.log.info({ repository: r.name, ...options, principal: req.principal.id }, "repository options set");
      }
      return reply.code(201).header("location", `/api/repositories/${encodeURIComponent(r.name)}`).send(await withOptions(detail(r)));
    },
  );

  app.get(
    "/api/repositories/:name",
    { schema: { params: nameParam, response: { 200: detailAnswer, ...errorResponses(400, 404) } } },
    async (req) => {
      const r = await withOptions(detail(await deps.admin.show(req.params.name)));
      const cooldown = deps.gate?.cooldown;
      return cooldown ? { ...r, gate: await cooldown.repositoryGate(req.params.name) } : r;
    },
  );

  app.patch(
    "/api/repositories/:name",
    { schema: { summary: "Changes a repository's settings: quotaBytes (null removes the quota), scopeFromPath, and its format's options (oci: immutableTags)", params: nameParam, body: patchBody, response: { 200: detailAnswer, ...errorResponses(400, 404, 413, 415) } } },
    async (req) => {
      let r = detail(await deps.admin.show(req.params.name));
      const options = optionsIn(req.body as Record<string, unknown>, r.format);
      if (req.body.quotaBytes !== undefined) {
        r = detail(await deps.admin.setQuota(req.params.name, req.body.quotaBytes));
        req.log.info({ repository: r.name, quotaBytes: r.quotaBytes, usedBytes: r.usedBytes, principal: req.principal.id }, r.quotaBytes === null ? "repository quota removed" : "repository quota set");
      }
      if (req.body.scopeFromPath !== undefined) {
        r = detail(await deps.admin.setScopeFromPath(req.params.name, req.body.scopeFromPath));
        req.log.info({ repository: r.name, scopeFromPath: r.scopeFromPath, principal: req.principal.id }, r.scopeFromPath ? "repository authorised by its path" : "repository authorised by the header only");
      }
      if (Object.keys(options).length > 0) {
        await deps.formats.of(r.name)?.options?.set(r.name, options);
        req.log.info({ repository: r.name, ...options, principal: req.principal.id }, "repository options set");
      }
      return withOptions(r);
    },
  );

  app.put(
    "/api/repositories/:name/members",
    { schema: { params: nameParam, body: membersBody, response: { 200: detailSchema, ...errorResponses(400, 404, 409, 413, 415) } } },
    async (req) => {
      const r = await deps.admin.setMembers(req.params.name, req.body.members);
      req.log.info({ repository: r.name, members: r.members, principal: req.principal.id }, "group members set");
      return detail(r);
    },
  );

  app.delete(
    "/api/repositories/:name",
    { schema: { params: nameParam, querystring: deleteQuery, response: { 204: NoContent, ...errorResponses(400, 404, 409) } } },
    async (req, reply) => {
      const removed = await deps.admin.remove(req.params.name, req.query.force === "true", actorOf(req.principal));
      req.log.info({ repository: req.params.name, artifactsRemoved: removed, principal: req.principal.id }, "repository removed");
      return reply.code(204).send();
    },
  );

  /** A repository's files, one page per request in byte order of the path: what the console's browser reads. */
  app.get(
    "/api/repositories/:name/files",
    { schema: { params: nameParam, querystring: filesQuery, response: { 200: Type.Array(fileSchema), ...errorResponses(400, 404) } } },
    async (req, reply) => {
      const { after, limit } = readPaging(req.query);
      const prefix = req.query.prefix?.replace(/^\/+/, "") || undefined;
      const rows = await metadata.browse(req.params.name, { prefix, after, limit: limit + 1 });
      if (rows.length === 0 && !(await metadata.hasRepository(req.params.name))) throw notFound(`no repository named ${req.params.name}`);
      const page = rows.slice(0, limit);
      if (rows.length > limit) reply.header("x-next-cursor", page[page.length - 1]!.path);
      return page.map((r) => ({
        path: r.path,
        size: r.size,
        sha256: r.sha256,
        contentType: r.contentType,
        updated: r.updated.toISOString(),
        lastDownloaded: r.lastDownloaded?.toISOString() ?? null,
        downloads: r.downloads,
        held: r.heldReason,
      }));
    },
  );

  for (const prefix of ["/api", "/internal"]) {
    const internal = prefix === "/internal";
    const guard = (kind: string) => {
      if (internal && kind !== "system") throw forbidden("internal route");
    };

    app.get(
      `${prefix}/repositories/:name/retention`,
      { schema: { params: nameParam, response: { 200: retention, ...errorResponses(400, 404) } } },
      async (req) => {
        guard(req.principal.kind);
        const policy = await metadata.retention(req.params.name);
        if (policy === undefined) throw notFound(`no repository named ${req.params.name}`);
        if (policy === null) throw notFound(`repository ${req.params.name} has no retention policy`);
        return policy;
      },
    );

    app.put(
      `${prefix}/repositories/:name/retention`,
      { schema: { params: nameParam, body: retention, response: { 200: retention, ...errorResponses(400, 404, 413, 415) } } },
      async (req) => {
        guard(req.principal.kind);
        const policy = parseRetentionPolicy(req.body);
        if (!(await metadata.setRetention(req.params.name, policy))) throw notFound(`no repository named ${req.params.name}`);
        req.log.info({ repository: req.params.name, policy, principal: req.principal.id }, "retention policy set");
        return policy;
      },
    );

    app.delete(
      `${prefix}/repositories/:name/retention`,
      { schema: { params: nameParam, response: { 204: NoContent, ...errorResponses(400, 404) } } },
      async (req, reply) => {
        guard(req.principal.kind);
        const policy = await metadata.retention(req.params.name);
        if (policy === undefined) throw notFound(`no repository named ${req.params.name}`);
        if (policy === null) throw notFound(`repository ${req.params.name} has no retention policy`);
        await metadata.setRetention(req.params.name, null);
        req.log.info({ repository: req.params.name, principal: req.principal.id }, "retention policy removed");
        return reply.code(204).send();
      },
    );
  }
}
