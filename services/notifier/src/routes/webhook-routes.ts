import { Type } from "@sinclair/typebox";
import type { DeliveryService } from "../domain/delivery-service.js";
import { DELIVERY_STATES } from "../store/schema.js";
import { Answer, EmptyBody, Nullable, StringEnum, errorResponses, readLimit, type ServiceApp } from "@svc/kit";

const deliverySchema = Answer({
  id: Type.String(),
  event: Type.String(),
  type: Type.String(),
  endpoint: Type.String(),
  state: StringEnum(DELIVERY_STATES),
  attempts: Type.Integer(),
  nextAttempt: Nullable(Type.String()),
  lastStatus: Nullable(Type.Integer()),
  lastError: Nullable(Type.String()),
  created: Type.String(),
  updated: Type.String(),
  delivered: Nullable(Type.String()),
});

const endpointSchema = Answer({
  url: Type.String(),
  events: Type.Array(Type.String()),
  allEvents: Type.Boolean(),
  signed: Type.Boolean(),
});

const idParam = Type.Object({ id: Type.String({ pattern: "^[0-9]{1,18}$" }) });

/**
 * `/api/webhooks`: delivery records and the endpoints in force. The gateway routes the prefix
 * here and checks manage:read (GET) or manage:write (POST) at `*` before it does.
 */
export function webhookRoutes(app: ServiceApp, svc: DeliveryService): void {
  app.get(
    "/api/webhooks/deliveries",
    {
      schema: {
        querystring: Type.Object(
          {
            state: Type.Optional(StringEnum(DELIVERY_STATES)),
            endpoint: Type.Optional(Type.String({ maxLength: 2048 })),
            event: Type.Optional(Type.String({ maxLength: 200 })),
            after: Type.Optional(Type.String({ pattern: "^([0-9]{1,18})?$" })),
            limit: Type.Optional(Type.String()),
          },
          { additionalProperties: false },
        ),
        response: { 200: Type.Array(deliverySchema), ...errorResponses(400) },
      },
    },
    async (req, reply) => {
      const q = req.query;
      const page = await svc.list({ state: q.state, endpoint: q.endpoint || undefined, event: q.event || undefined, after: q.after || undefined, limit: readLimit(q.limit) });
      if (page.next) reply.header("x-next-cursor", page.next);
      return page.items;
    },
  );

  app.get(
    "/api/webhooks/deliveries/:id",
    { schema: { params: idParam, response: { 200: deliverySchema, ...errorResponses(400, 404) } } },
    async (req) => svc.get(req.params.id),
  );

  app.post(
    "/api/webhooks/deliveries/:id/redeliver",
    {
      schema: {
        params: idParam,
        body: EmptyBody,
        response: { 200: deliverySchema, ...errorResponses(400, 404, 409, 413, 415) },
      },
    },
    async (req) => {
      const d = await svc.redeliver(req.params.id);
      req.log.info({ deliveryId: d.id, eventId: d.event, endpoint: d.endpoint, principal: req.principal.id }, "webhook delivery queued again");
      return d;
    },
  );

  app.get(
    "/api/webhooks/endpoints",
    {
      schema: {
        querystring: Type.Object({ after: Type.Optional(Type.String({ maxLength: 2048 })), limit: Type.Optional(Type.String()) }, { additionalProperties: false }),
        response: { 200: Type.Array(endpointSchema), ...errorResponses(400) },
      },
    },
    async (req, reply) => {
      const page = svc.endpoints({ after: req.query.after || undefined, limit: readLimit(req.query.limit) });
      if (page.next) reply.header("x-next-cursor", page.next);
      return page.items;
    },
  );
}
