import type { FastifyInstance } from "fastify";
import type { RunRecord } from "../store/walk-store.js";
import { JOB_NAMES } from "../domain/job-types.js";
import type { WalkService, WalkView } from "../domain/walk-service.js";
import { errorResponses as errors, pagingQuerySchema, readPaging } from "@svc/kit";

const counts = { type: "object", additionalProperties: { type: "object", additionalProperties: { type: "number" } } } as const;
const runSchema = {
  type: "object",
  properties: {
    id: { type: "string" },
    walk: { type: "string" },
    trigger: { type: "string" },
    scheduledFor: { type: ["string", "null"] },
    started: { type: "string" },
    ended: { type: ["string", "null"] },
    outcome: { type: "string" },
    jobs: { type: "array", items: { type: "string" } },
    counts,
    entries: { type: "integer" },
    bytes: { type: "integer" },
    node: { type: "string" },
    reference: { type: ["string", "null"] },
  },
} as const;
const walkSchema = {
  type: "object",
  properties: {
    name: { type: "string" },
    schedule: { type: "string" },
    enabled: { type: "boolean" },
    jobs: { type: "array", items: { type: "string" } },
    nextRun: { type: ["string", "null"] },
    lastRun: { anyOf: [{ type: "null" }, runSchema] },
  },
} as const;
const nameParam = { type: "object", properties: { name: { type: "string", minLength: 1, maxLength: 200 } }, required: ["name"] } as const;
const schedule = { type: "string", minLength: 1, maxLength: 200 } as const;
const jobs = { type: "array", items: { type: "string", maxLength: 50 }, maxItems: 20, description: `any of ${JOB_NAMES.join(", ")}` } as const;

const runOut = (r: RunRecord) => ({
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
  node: r.holder,
  reference: r.reference,
});
const walkOut = (w: WalkView) => ({ name: w.name, schedule: w.schedule, enabled: w.enabled, jobs: w.jobs, nextRun: w.nextRun?.toISOString() ?? null, lastRun: w.lastRun ? runOut(w.lastRun) : null });

/**
 * `/api/walks`: walk definitions, their run records, and "walk the store now". The gateway
 * sends everything under `/api/walks` here and checks manage:read / manage:write first.
 */
export function walkRoutes(app: FastifyInstance, svc: WalkService): void {
  app.get<{ Querystring: { after?: string; limit?: string } }>(
    "/api/walks",
    { schema: { querystring: pagingQuerySchema, response: { 200: { type: "array", items: walkSchema }, ...errors } } },
    async (req, reply) => {
      const page = await svc.list(readPaging(req.query));
      if (page.next) reply.header("x-next-cursor", page.next);
      return page.items.map(walkOut);
    },
  );

  app.post<{ Body: { name: string; schedule: string; enabled?: boolean; jobs: string[] } }>(
    "/api/walks",
    {
      schema: {
        body: {
          type: "object",
          properties: { name: { type: "string", minLength: 1, maxLength: 200 }, schedule, enabled: { type: "boolean" }, jobs },
          required: ["name", "schedule", "jobs"],
          additionalProperties: false,
        },
        response: { 201: walkSchema, ...errors },
      },
    },
    async (req, reply) => {
      const w = await svc.add(req.body);
      req.log.info({ walk: w.name, schedule: w.schedule, jobs: w.jobs, enabled: w.enabled, principal: req.principal.id }, "walk added");
      return reply.code(201).send(walkOut(w));
    },
  );

  // "Walk the store now": registered before /:name so it is never read as a walk's name.
  app.post(
    "/api/walks/run",
    { schema: { body: { type: ["object", "null"], properties: {}, additionalProperties: false }, response: { 202: runSchema, ...errors } } },
    async (req, reply) => {
      const run = await svc.runNow();
      req.log.info({ walk: run.walk, run: run.id, jobs: run.jobs, principal: req.principal.id }, "walk the store now");
      return reply.code(202).send(runOut(run));
    },
  );

  app.get<{ Params: { name: string } }>("/api/walks/:name", { schema: { params: nameParam, response: { 200: walkSchema, ...errors } } }, async (req) => walkOut(await svc.get(req.params.name)));

  app.put<{ Params: { name: string }; Body: { schedule?: string; enabled?: boolean; jobs?: string[] } }>(
    "/api/walks/:name",
    {
      schema: {
        params: nameParam,
        body: { type: "object", properties: { schedule, enabled: { type: "boolean" }, jobs }, additionalProperties: false, minProperties: 1 },
        response: { 200: walkSchema, ...errors },
      },
    },
    async (req) => {
      const w = await svc.edit(req.params.name, req.body);
      req.log.info({ walk: w.name, change: req.body, principal: req.principal.id }, "walk changed");
      return walkOut(w);
    },
  );

  app.delete<{ Params: { name: string } }>(
    "/api/walks/:name",
    { schema: { params: nameParam, response: { 204: { type: "null" }, ...errors } } },
    async (req, reply) => {
      await svc.remove(req.params.name);
      req.log.info({ walk: req.params.name, principal: req.principal.id }, "walk removed");
      return reply.code(204).send();
    },
  );

  app.get<{ Params: { name: string }; Querystring: { after?: string; limit?: string } }>(
    "/api/walks/:name/runs",
    { schema: { params: nameParam, querystring: pagingQuerySchema, response: { 200: { type: "array", items: runSchema }, ...errors } } },
    async (req, reply) => {
      const page = await svc.runs(req.params.name, readPaging(req.query));
      if (page.next) reply.header("x-next-cursor", page.next);
      return page.items.map(runOut);
    },
  );

  app.post<{ Params: { name: string } }>(
    "/api/walks/:name/run",
    { schema: { params: nameParam, body: { type: ["object", "null"], properties: {}, additionalProperties: false }, response: { 202: runSchema, ...errors } } },
    async (req, reply) => {
      const run = await svc.runWalk(req.params.name);
      req.log.info({ walk: run.walk, run: run.id, jobs: run.jobs, principal: req.principal.id }, "walk started on request");
      return reply.code(202).send(runOut(run));
    },
  );
}
