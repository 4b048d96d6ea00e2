import { LIMITS } from "@svc/contracts";
import { Type } from "@sinclair/typebox";
import type { WalkRunView, WalkView as WalkAnswer } from "@svc/contracts";
import type { RunRecord } from "../store/walk-store.js";
import { JOB_NAMES } from "../domain/job-types.js";
import type { WalkService, WalkView } from "../domain/walk-service.js";
import { Answer, EmptyBody, NoContent, Nullable, StringEnum, errorResponses, pagingQuerySchema, readPaging, type ServiceApp } from "@svc/kit";

/** Per job, per count name, a number: `{ "retention": { "removed": 3 } }`. */
const counts = Type.Unsafe<Record<string, Record<string, number>>>({ type: "object", additionalProperties: { type: "object", additionalProperties: { type: "number" } } });
const runSchema = Answer({
  id: Type.String(),
  walk: Type.String(),
  trigger: Type.String(),
  scheduledFor: Nullable(Type.String()),
  started: Type.String(),
  ended: Nullable(Type.String()),
  outcome: Type.String(),
  jobs: Type.Array(Type.String()),
  counts,
  entries: Type.Integer({ description: "index rows the walk saw" }),
  bytes: Type.Integer({ description: "bytes the index rows it saw hold" }),
  blobs: Type.Integer({ description: "blobs of the store's listing it saw (listed only for reclaim and repair)" }),
  durationMs: Nullable(Type.Integer({ description: "how long the run took (so far, while running), in milliseconds; null when it never went over the store" })),
  node: Type.String(),
  reference: Nullable(Type.String()),
  detail: Nullable(Type.String()),
  problems: Type.Object(
    {
      count: Type.Integer(),
      first: Type.Array(Type.Object({ repository: Nullable(Type.String()), path: Nullable(Type.String()), detail: Type.String() })),
    },
    { description: "entries the walk passed by (it goes on past each): how many, and the first few with why" },
  ),
});
const walkSchema = Answer({
  name: Type.String(),
  schedule: Type.String(),
  enabled: Type.Boolean(),
  jobs: Type.Array(Type.String()),
  nextRun: Nullable(Type.String()),
  lastRun: Type.Union([Type.Null(), runSchema]),
});
const nameParam = Type.Object({ name: Type.String({ minLength: 1, maxLength: LIMITS.walkName }) });
const schedule = Type.String({ minLength: 1, maxLength: 200 });
const dryRunQuery = Type.Object(
  { dryRun: Type.Optional(StringEnum(["true", "false"] as const, { description: "true: check the walk and answer it as it would be (its next run), saving nothing" })) },
  { additionalProperties: false },
);
const jobs = Type.Array(Type.String({ maxLength: 50 }), { maxItems: 20, description: `any of ${JOB_NAMES.join(", ")}` });

// Typed as the contract the console and the CLI read, so the answer cannot drift from it.
const runOut = (r: RunRecord): WalkRunView => ({
  id: r.id,
  walk: r.walk,
  trigger: r.trigger,
  scheduledFor: r.scheduledFor?.toISOString() ?? null,
  started: r.started.toISOString(),
  ended: r.ended?.toISOString() ?? null,
  outcome: r.outcome,
  jobs: r.jobs,
  counts: r.counts,
  entries: r.entries,
  bytes: r.bytes,
  blobs: r.blobs,
  durationMs: r.durationMs,
  node: r.holder,
  reference: r.reference,
  detail: r.detail,
  problems: r.problems,
});
const walkOut = (w: WalkView): WalkAnswer => ({ name: w.name, schedule: w.schedule, enabled: w.enabled, jobs: w.jobs, nextRun: w.nextRun?.toISOString() ?? null, lastRun: w.lastRun ? runOut(w.lastRun) : null });

/**
 * `/api/walks`: walk definitions, their run records, and "walk the store now". The gateway
 * sends everything under `/api/walks` here and checks manage:read / manage:write first.
 */
export function walkRoutes(app: ServiceApp, svc: WalkService): void {
  app.get(
    "/api/walks",
    { schema: { querystring: pagingQuerySchema, response: { 200: Type.Array(walkSchema), ...errorResponses(400) } } },
    async (req, reply) => {
      const page = await svc.list(readPaging(req.query));
      if (page.next) reply.header("x-next-cursor", page.next);
      return page.items.map(walkOut);
    },
  );

  app.post(
    "/api/walks",
    {
      schema: {
        body: Type.Object(
          { name: Type.String({ minLength: 1, maxLength: LIMITS.walkName }), schedule, enabled: Type.Optional(Type.Boolean()), jobs },
          { additionalProperties: false },
        ),
        querystring: dryRunQuery,
        response: { 200: walkSchema, 201: walkSchema, ...errorResponses(400, 409, 413, 415) },
      },
    },
    async (req, reply) => {
      if (req.query.dryRun === "true") return walkOut(await svc.add(req.body, { dryRun: true }));
      const w = await svc.add(req.body);
      req.log.info({ walk: w.name, schedule: w.schedule, jobs: w.jobs, enabled: w.enabled, principal: req.principal.id }, "walk added");
      return reply.code(201).send(walkOut(w));
    },
  );

  // "Walk the store now": registered before /:name so it is never read as a walk's name.
  app.post(
    "/api/walks/run",
    { schema: { body: EmptyBody, response: { 202: runSchema, ...errorResponses(400, 409, 413, 415) } } },
    async (req, reply) => {
      const run = await svc.runNow();
      req.log.info({ walk: run.walk, run: run.id, jobs: run.jobs, principal: req.principal.id }, "walk the store now");
      return reply.code(202).send(runOut(run));
    },
  );

  app.get("/api/walks/:name", { schema: { params: nameParam, response: { 200: walkSchema, ...errorResponses(400, 404) } } }, async (req) => walkOut(await svc.get(req.params.name)));

  app.put(
    "/api/walks/:name",
    {
      schema: {
        params: nameParam,
        body: Type.Object({ schedule: Type.Optional(schedule), enabled: Type.Optional(Type.Boolean()), jobs: Type.Optional(jobs) }, { additionalProperties: false, minProperties: 1 }),
        querystring: dryRunQuery,
        response: { 200: walkSchema, ...errorResponses(400, 404, 413, 415) },
      },
    },
    async (req) => {
      if (req.query.dryRun === "true") return walkOut(await svc.edit(req.params.name, req.body, { dryRun: true }));
      const w = await svc.edit(req.params.name, req.body);
      req.log.info({ walk: w.name, change: req.body, principal: req.principal.id }, "walk changed");
      return walkOut(w);
    },
  );

  app.delete(
    "/api/walks/:name",
    { schema: { params: nameParam, response: { 204: NoContent, ...errorResponses(400, 404) } } },
    async (req, reply) => {
      await svc.remove(req.params.name);
      req.log.info({ walk: req.params.name, principal: req.principal.id }, "walk removed");
      return reply.code(204).send();
    },
  );

  app.get(
    "/api/walks/:name/runs",
    { schema: { params: nameParam, querystring: pagingQuerySchema, response: { 200: Type.Array(runSchema), ...errorResponses(400, 404) } } },
    async (req, reply) => {
      const page = await svc.runs(req.params.name, readPaging(req.query));
      if (page.next) reply.header("x-next-cursor", page.next);
      return page.items.map(runOut);
    },
  );

  app.post(
    "/api/walks/:name/run",
    { schema: { params: nameParam, body: EmptyBody, response: { 202: runSchema, ...errorResponses(400, 404, 409, 413, 415) } } },
    async (req, reply) => {
      const run = await svc.runWalk(req.params.name);
      req.log.info({ walk: run.walk, run: run.id, jobs: run.jobs, principal: req.principal.id }, "walk started on request");
      return reply.code(202).send(runOut(run));
    },
  );
}
