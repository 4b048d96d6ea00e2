import type { FastifyInstance } from "fastify";
import type { DeliveryService } from "../domain/delivery-service.js";
import { DELIVERY_STATES, type DeliveryState } from "../store/schema.js";
import { errorResponses as errors, readLimit } from "@svc/kit";


const deliverySchema = {
  type: "object",
  properties: {
    id: { type: "string" },
    event: { type: "string" },
    type: { type: "string" },
    endpoint: { type: "string" },
    state: { type: "string", enum: [...DELIVERY_STATES] },
    attempts: { type: "integer" },
    nextAttempt: { type: ["string", "null"] },
    lastStatus: { type: ["integer", "null"] },
    lastError: { type: ["string", "null"] },
    created: { type: "string" },
    updated: { type: "string" },
    delivered: { type: ["string", "null"] },
  },
} as const;

const endpointSchema = {
  type: "object",
  properties: {
    url: { type: "string" },
    events: { type: "array", items: { type: "string" } },
    allEvents: { type: "boolean" },
    signed: { type: "boolean" },
  },
} as const;

const idParam = {
  type: "object",
  properties: { id: { type: "string", pattern: "^[0-9]{1,18}$" } },
  required: ["id"],
} as const;

interface ListQuery {
  state?: DeliveryState;
  endpoint?: string;
  event?: string;
  after?: string;
  limit?: string;
}

/**
 * `/api/webhooks`: delivery records and the endpoints in force. The gateway routes the prefix
 * here and checks manage:read (GET) or manage:write (POST) at `*` before it does.
 */
export function webhookRoutes(app: FastifyInstance, svc: DeliveryService): void {
  app.get<{ Querystring: ListQuery }>(
    "/api/webhooks/deliveries",
    {
      schema: {
        querystring: {
          type: "object",
          properties: {
            state: { type: "string", enum: [...DELIVERY_STATES] },
            endpoint: { type: "string", maxLength: 2048 },
            event: { type: "string", maxLength: 200 },
            after: { type: "string", pattern: "^([0-9]{1,18})?$" },
            limit: { type: "string" },
          },
          additionalProperties: false,
        },
        response: { 200: { type: "array", items: deliverySchema }, ...errors },
      },
    },
    async (req, reply) => {
      const q = req.query;
      const page = await svc.list({ state: q.state, endpoint: q.endpoint || undefined, event: q.event || undefined, after: q.after || undefined, limit: readLimit(q.limit) });
      if (page.next) reply.header("x-next-cursor", page.next);
      return page.items;
    },
  );

  app.get<{ Params: { id: string } }>(
    "/api/webhooks/deliveries/:id",
    { schema: { params: idParam, response: { 200: deliverySchema, ...errors } } },
    async (req) => svc.get(req.params.id),
  );

  app.post<{ Params: { id: string } }>(
    "/api/webhooks/deliveries/:id/redeliver",
    {
      schema: {
        params: idParam,
        body: { type: ["object", "null"], properties: {}, additionalProperties: false },
        response: { 200: deliverySchema, ...errors },
      },
    },
    async (req) => {
      const d = await svc.redeliver(req.params.id);
      req.log.info({ deliveryId: d.id, eventId: d.event, endpoint: d.endpoint, principal: req.principal.id }, "webhook delivery queued again");
      return d;
    },
  );

  app.get<{ Querystring: { after?: string; limit?: string } }>(
    "/api/webhooks/endpoints",
    {
      schema: {
        querystring: { type: "object", properties: { after: { type: "string", maxLength: 2048 }, limit: { type: "string" } }, additionalProperties: false },
        response: { 200: { type: "array", items: endpointSchema }, ...errors },
      },
    },
    async (req, reply) => {
      const page = svc.endpoints({ after: req.query.after || undefined, limit: readLimit(req.query.limit) });
      if (page.next) reply.header("x-next-cursor", page.next);
      return page.items;
    },
  );
}
