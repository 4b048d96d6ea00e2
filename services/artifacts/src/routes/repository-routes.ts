import type { FastifyInstance } from "fastify";
import { forbidden, notFound } from "@svc/contracts";
import { parseRetentionPolicy, retentionPolicySchema, type RetentionPolicy } from "../domain/retention-policy.js";
import type { MetadataStore } from "../store/metadata-store.js";
import { errorResponses as errors, pagingQuerySchema, readPaging } from "@svc/kit";

const repositorySchema = {
  type: "object",
  properties: { name: { type: "string" }, format: { type: "string" }, retention: { anyOf: [{ type: "null" }, retentionPolicySchema] } },
} as const;
const nameParam = { type: "object", properties: { name: { type: "string", minLength: 1, maxLength: 200 } }, required: ["name"] } as const;

export interface RepositoryRoutesDeps {
  metadata: Pick<MetadataStore, "repositories" | "retention" | "setRetention">;
}

/**
 * Repository configuration the artifacts service owns. `/api/repositories/...` is for
 * administrators through the gateway (manage:read / manage:write at `*`);
 * `/internal/repositories/...` is the same for the walker, signed as a system principal.
 */
export function repositoryRoutes(app: FastifyInstance, deps: RepositoryRoutesDeps): void {
  const { metadata } = deps;

  app.get<{ Querystring: { after?: string; limit?: string } }>(
    "/api/repositories",
    { schema: { querystring: pagingQuerySchema, response: { 200: { type: "array", items: repositorySchema }, ...errors } } },
    async (req, reply) => {
      const { after, limit } = readPaging(req.query);
      const all = (await metadata.repositories()).filter((r) => after === undefined || r.name > after);
      const page = all.slice(0, limit);
      if (all.length > limit) reply.header("x-next-cursor", page[page.length - 1]!.name);
      return page;
    },
  );

  for (const prefix of ["/api", "/internal"]) {
    const internal = prefix === "/internal";
    const guard = (kind: string) => {
      if (internal && kind !== "system") throw forbidden("internal route");
    };

    app.get<{ Params: { name: string } }>(
      `${prefix}/repositories/:name/retention`,
      { schema: { params: nameParam, response: { 200: retentionPolicySchema, ...errors } } },
      async (req) => {
        guard(req.principal.kind);
        const policy = await metadata.retention(req.params.name);
        if (policy === undefined) throw notFound(`no repository named ${req.params.name}`);
        if (policy === null) throw notFound(`repository ${req.params.name} has no retention policy`);
        return policy;
      },
    );

    app.put<{ Params: { name: string }; Body: RetentionPolicy }>(
      `${prefix}/repositories/:name/retention`,
      { schema: { params: nameParam, body: retentionPolicySchema, response: { 200: retentionPolicySchema, ...errors } } },
      async (req) => {
        guard(req.principal.kind);
        const policy = parseRetentionPolicy(req.body);
        if (!(await metadata.setRetention(req.params.name, policy))) throw notFound(`no repository named ${req.params.name}`);
        req.log.info({ repository: req.params.name, policy, principal: req.principal.id }, "retention policy set");
        return policy;
      },
    );

    app.delete<{ Params: { name: string } }>(
      `${prefix}/repositories/:name/retention`,
      { schema: { params: nameParam, response: { 204: { type: "null" }, ...errors } } },
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
