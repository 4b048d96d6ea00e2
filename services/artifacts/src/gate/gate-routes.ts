import { Type } from "@sinclair/typebox";
import { LIMITS, invalid } from "@svc/contracts";
import { Answer, NoContent, Nullable, errorResponses, pagingQuerySchema, readPaging, type ServiceApp } from "@svc/kit";
import { actorOf } from "../domain/artifact-service.js";
import type { Downloader } from "../store/metadata-store.js";
import type { Cooldown } from "./cooldown.js";
import { cooldownRoutes } from "./cooldown-routes.js";
import type { GateService } from "./gate-service.js";
import { FINDING_STATUSES, UUID, type DenyEntry, type FindingRow, type GateStore, type Refusal } from "./gate-store.js";

const date = Type.String({ format: "date-time" });
/** The principals a finding names at most (the latest downloads); `downloaders` counts them all. */
const DOWNLOADERS_SHOWN = 20;
const denySchema = Answer({
  id: Type.String(),
  ecosystem: Type.String({ description: "npm, PyPI or Maven" }),
  name: Type.String({ description: "the package (PyPI: normalised; Maven: groupId:artifactId)" }),
  versions: Type.String({ description: "the range, in the ecosystem's syntax; * for every version" }),
  reason: Type.String(),
  createdBy: Type.String(),
  created: date,
});
const denyBody = Type.Object(
  {
    ecosystem: Type.String({ minLength: 1, maxLength: 20, description: "npm, PyPI or Maven" }),
    name: Type.String({ minLength: 1, maxLength: 512 }),
    versions: Type.String({ maxLength: 512, description: "npm: a semver range (^1.2.0, <2); PyPI: a PEP 440 specifier (>=1.0,<1.4); Maven: a range ([1.0,2.0), (,1.5]); crates.io: a semver requirement (>=1.0, <1.4); * or blank: every version" }),
    reason: Type.String({ minLength: 1, maxLength: 1000 }),
  },
  { additionalProperties: false },
);
const heldSchema = Answer({
  id: Type.String(),
  repository: Type.String(),
  path: Type.String(),
  size: Type.Integer(),
  sha256: Type.String(),
  reason: Type.String(),
  held: Nullable(date),
  published: date,
  downloads: Type.Integer(),
});
/** What a finding and a refusal both say of the file: which one, and its package version. */
const packageFile = {
  id: Type.String(),
  repository: Type.String(),
  path: Type.String(),
  ecosystem: Type.String(),
  name: Type.String(),
  version: Type.String(),
};
const findingSchema = Answer({
  ...packageFile,
  type: Type.String({ description: "malware, vulnerability or deny-list" }),
  level: Nullable(Type.String({ description: "the CVSS level (CRITICAL, HIGH, MEDIUM, LOW); null for a deny list entry" })),
  advisory: Type.String({ description: "the OSV id, or deny-list:<entry id>" }),
  summary: Type.String(),
  action: Type.String({ description: "the action its setting named when it was found" }),
  found: date,
  dataLoaded: Nullable(date),
  downloads: Type.Integer({ description: "downloads of the file when it was found" }),
  lastDownloaded: Nullable(date),
  status: Type.String({ description: "open, confirmed (a real problem: the file is held) or dismissed (not one)" }),
  triagedBy: Nullable(Type.String({ description: "who confirmed or dismissed it (kind:id)" })),
  triaged: Nullable(date),
  note: Nullable(Type.String()),
  downloaders: Type.Integer({ description: "how many principals downloaded the file, ever (the blast radius)" }),
  downloadedBy: Type.Array(
    Answer({ principal: Type.String({ description: "kind:id (key:<key id>, person:<id>, anonymous:)" }), first: date, last: date, downloads: Type.Integer() }),
    { description: `who downloaded the file, the latest ${DOWNLOADERS_SHOWN} first` },
  ),
});
const refusalSchema = Answer({
  ...packageFile,
  reason: Type.String({ description: "what the client was told" }),
  principal: Type.String({ description: "who tried to store it, or asked for a file the cooldown refused (kind:id)" }),
  refused: date,
});
const triageBody = Type.Object({ note: Type.Optional(Type.String({ maxLength: 1000, description: "why (kept with the finding)" })) }, { additionalProperties: false });
const sourceSchema = Answer({
  source: Type.String(),
  state: Type.String({ description: "loaded, failed (its last good data stays in use) or pending (not read yet)" }),
  records: Type.Integer(),
  loaded: Nullable(date),
  attempted: Nullable(date),
  error: Nullable(Type.String()),
});
const statusSchema = Answer({
  sources: Type.Array(sourceSchema),
  loaded: Nullable(Type.String({ format: "date-time", description: "when the oldest source's data was loaded" })),
  ageSeconds: Nullable(Type.Integer({ description: "the age of that data" })),
  refreshSeconds: Type.Integer(),
  failed: Type.Integer({ description: "sources whose last read failed" }),
});
const idParam = Type.Object({ id: Type.String({ minLength: 1, maxLength: 4096 }) });
const repositoryQuery = Type.Object({ ...pagingQuerySchema.properties, repository: Type.Optional(Type.String({ minLength: 1, maxLength: LIMITS.repositoryName })) }, { additionalProperties: false });
const findingsQuery = Type.Object(
  { ...repositoryQuery.properties, status: Type.Optional(Type.Union(FINDING_STATUSES.map((v) => Type.Literal(v)), { description: "only findings of this status" })) },
  { additionalProperties: false },
);

/** A cursor that is an id of the list (a uuid), else a 400: a bad cursor is never read as "from the start". */
const uuidCursor = (after: string | undefined, what: string): string | undefined => {
  if (after !== undefined && !UUID.test(after)) throw invalid("after", `after must be the id of a ${what} (the X-Next-Cursor of the previous page)`);
  return after;
};
const iso = (d: Date | null) => d?.toISOString() ?? null;
const deny = (e: DenyEntry) => ({ ...e, created: e.created.toISOString() });
const finding = (f: FindingRow, who: { total: number; latest: Downloader[] } | undefined) => ({
  ...f,
  found: f.found.toISOString(),
  dataLoaded: iso(f.dataLoaded),
  lastDownloaded: iso(f.lastDownloaded),
  triaged: iso(f.triaged),
  downloaders: who?.total ?? 0,
  downloadedBy: (who?.latest ?? []).map((d) => ({ principal: d.principal, first: d.first.toISOString(), last: d.last.toISOString(), downloads: d.downloads })),
});
const refusal = (r: Refusal) => ({ ...r, refused: r.refused.toISOString() });
/** A source as the API shows it: a URL without its query or fragment (a token may ride there). */
const shown = (source: string) => source.replace(/[?#].*$/, "");

export interface GateRoutesDeps {
  gate: GateService;
  store: Pick<GateStore, "denyList" | "findings" | "refusals" | "sources" | "loadedAt">;
  /** svc.advisories.sources and svc.advisories.refresh. */
  sources: readonly string[];
  refreshMs: number;
  /** The cooldown's allows and repositories' own minimum ages (cooldown-routes.ts). */
  cooldown?: Cooldown;
}

/**
 * The screening gate's administration (docs/administration/screening.md): the deny list, held
 * files, findings and the advisory data's state. Under /api/, so the gateway asks manage:read
 * to read and manage:write to change.
 */
export function gateRoutes(app: ServiceApp, deps: GateRoutesDeps): void {
  if (deps.cooldown) cooldownRoutes(app, deps.cooldown);
  app.get("/api/deny-list", { schema: { querystring: pagingQuerySchema, response: { 200: Type.Array(denySchema), ...errorResponses(400) } } }, async (req, reply) => {
    const { after, limit } = readPaging(req.query);
    const rows = await deps.store.denyList(uuidCursor(after, "deny list entry"), limit + 1);
    const page = rows.slice(0, limit);
    if (rows.length > limit) reply.header("x-next-cursor", page[page.length - 1]!.id);
    return page.map(deny);
  });

  app.post("/api/deny-list", { schema: { body: denyBody, response: { 201: denySchema, ...errorResponses(400, 413, 415) } } }, async (req, reply) => {
    const e = await deps.gate.addDenyEntry(req.body, actorOf(req.principal));
    req.log.info({ entry: e.id, ecosystem: e.ecosystem, name: e.name, versions: e.versions, principal: req.principal.id }, "deny list entry added");
    return reply.code(201).header("location", `/api/deny-list/${e.id}`).send(deny(e));
  });

  app.delete("/api/deny-list/:id", { schema: { params: idParam, response: { 204: NoContent, ...errorResponses(400, 404) } } }, async (req, reply) => {
    await deps.gate.removeDenyEntry(req.params.id);
    req.log.info({ entry: req.params.id, principal: req.principal.id }, "deny list entry removed");
    return reply.code(204).send();
  });

  app.get("/api/held", { schema: { querystring: repositoryQuery, response: { 200: Type.Array(heldSchema), ...errorResponses(400, 404) } } }, async (req, reply) => {
    const { after, limit } = readPaging(req.query);
    const rows = await deps.gate.held({ repository: req.query.repository, after, limit: limit + 1 });
    const page = rows.slice(0, limit);
    if (rows.length > limit) reply.header("x-next-cursor", page[page.length - 1]!.id);
    return page.map((h) => ({ ...h, held: iso(h.held), published: h.published.toISOString() }));
  });

  app.post("/api/held/:id/release", { schema: { params: idParam, response: { 204: NoContent, ...errorResponses(400, 404, 409) } } }, async (req, reply) => {
    await deps.gate.release(req.params.id, actorOf(req.principal));
    req.log.info({ held: req.params.id, principal: req.principal.id }, "held file released");
    return reply.code(204).send();
  });

  app.delete("/api/held/:id", { schema: { params: idParam, response: { 204: NoContent, ...errorResponses(400, 403, 404) } } }, async (req, reply) => {
    await deps.gate.discard(req.params.id, actorOf(req.principal));
    req.log.info({ held: req.params.id, principal: req.principal.id }, "held file discarded");
    return reply.code(204).send();
  });

  app.get("/api/findings", { schema: { querystring: findingsQuery, response: { 200: Type.Array(findingSchema), ...errorResponses(400) } } }, async (req, reply) => {
    const { after, limit } = readPaging(req.query);
    const rows = await deps.store.findings({ repository: req.query.repository, status: req.query.status, after: uuidCursor(after, "finding"), limit: limit + 1 });
    const page = rows.slice(0, limit);
    if (rows.length > limit) reply.header("x-next-cursor", page[page.length - 1]!.id);
    const who = await deps.gate.downloadersOf(page, DOWNLOADERS_SHOWN);
    return page.map((f) => finding(f, who.get(`${f.repository}/${f.path}`)));
  });

  for (const [verb, status] of [
    ["confirm", "confirmed"],
    ["dismiss", "dismissed"],
  ] as const) {
    app.post(
      `/api/findings/:id/${verb}`,
      {
        schema: {
          summary: verb === "confirm" ? "Confirms a finding: a real problem; the file is held if it is not already" : "Dismisses a finding: not a problem (a hold stays until released on the held list)",
          params: idParam,
          body: Type.Optional(triageBody),
          response: { 200: findingSchema, ...errorResponses(400, 404, 409, 413, 415) },
        },
      },
      async (req) => {
        const f = await deps.gate.triage(req.params.id, status, req.body?.note, actorOf(req.principal));
        req.log.info({ finding: f.id, status, principal: req.principal.id }, `finding ${status}`);
        const who = await deps.gate.downloadersOf([f], DOWNLOADERS_SHOWN);
        return finding(f, who.get(`${f.repository}/${f.path}`));
      },
    );
  }

  app.get("/api/refusals", { schema: { summary: "The refusal log: versions the screening gate refused (BLOCK) and requests for files the cooldown refused, newest first", querystring: repositoryQuery, response: { 200: Type.Array(refusalSchema), ...errorResponses(400) } } }, async (req, reply) => {
    const { after, limit } = readPaging(req.query);
    const rows = await deps.store.refusals({ repository: req.query.repository, after: uuidCursor(after, "refusal"), limit: limit + 1 });
    const page = rows.slice(0, limit);
    if (rows.length > limit) reply.header("x-next-cursor", page[page.length - 1]!.id);
    return page.map(refusal);
  });

  app.get("/api/advisories/status", { schema: { response: { 200: statusSchema, ...errorResponses() } } }, async () => {
    const [states, loaded] = await Promise.all([deps.store.sources(), deps.store.loadedAt()]);
    const byName = new Map(states.map((s) => [s.source, s]));
    const sources = deps.sources.map((source) => {
      const s = byName.get(source);
      const state = !s ? "pending" : s.error !== null ? "failed" : "loaded";
      return { source: shown(source), state, records: s?.records ?? 0, loaded: iso(s?.loadedAt ?? null), attempted: iso(s?.attemptedAt ?? null), error: s?.error ?? null };
    });
    return {
      sources,
      loaded: iso(loaded),
      ageSeconds: loaded ? Math.max(0, Math.floor((Date.now() - loaded.getTime()) / 1000)) : null,
      refreshSeconds: Math.round(deps.refreshMs / 1000),
      failed: sources.filter((s) => s.state === "failed").length,
    };
  });
}
