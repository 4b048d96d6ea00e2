import { createHash } from "node:crypto";
import { OPENAPI_VERSION, type ApiReport, type OpenApiDocument } from "@svc/kit";

/** The services whose `/api/...` routes the gateway forwards to: each one's description is expected. */
export const API_SERVICES = ["admin", "artifacts", "auth", "notifier", "walker"] as const;

/** The three ways the gateway reads a key (see the gateway's key reader). */
const SECURITY_SCHEMES = {
  repositoryKey: { type: "apiKey", in: "header", name: "Service-Repository-Key", description: "The key in its own header." },
  bearer: { type: "http", scheme: "bearer", description: "The key as a Bearer token." },
  basic: { type: "http", scheme: "basic", description: "The key as the Basic password (any user name)." },
};

/**
 * One document for the deployment from each service kind's own (replicas describe the same
 * routes, so the first answer of a kind stands for all). A schema name two services use for
 * different schemas is prefixed with the service's name in that service's part. A service
 * that did not answer is named under `x-missing-services` rather than failing the whole.
 */
export function mergeApiDocuments(reports: ApiReport[], expected: readonly string[] = API_SERVICES): OpenApiDocument {
  const byService = new Map<string, OpenApiDocument>();
  for (const r of reports) if (r?.document && !byService.has(r.service)) byService.set(r.service, r.document);
  const services = [...byService.keys()].sort();

  const paths: NonNullable<OpenApiDocument["paths"]> = {};
  const schemas: Record<string, unknown> = {};
  for (const service of services) {
    const doc = byService.get(service)!;
    const renames = new Map<string, string>();
    for (const [name, schema] of Object.entries(doc.components?.schemas ?? {})) {
      if (name in schemas && !sameJson(schemas[name], schema)) renames.set(name, `${service}-${name}`);
    }
    const own = renames.size ? renameRefs(doc, renames) : doc;
    for (const [name, schema] of Object.entries(own.components?.schemas ?? {})) schemas[renames.get(name) ?? name] ??= schema;
    for (const [path, operations] of Object.entries(own.paths ?? {})) {
      const merged = (paths[path] ??= {});
      for (const [method, op] of Object.entries(operations)) merged[method] ??= { ...op, tags: op.tags ?? [service] };
    }
  }

  const missing = expected.filter((s) => !byService.has(s));
  const body = { paths, components: { schemas, securitySchemes: SECURITY_SCHEMES } };
  return {
    openapi: OPENAPI_VERSION,
    info: {
      title: "Artifact repository API",
      // Changes whenever any route's description does, so a generated client can tell it is stale.
      version: createHash("sha256").update(JSON.stringify(body)).digest("hex").slice(0, 12),
      description: "Every /api/ route of the deployment, served by its gateway. Reading needs manage:read over * (the capabilities: any read right), changing needs manage:write over *.",
    },
    servers: [{ url: "/", description: "The gateway that served this document." }],
    security: Object.keys(SECURITY_SCHEMES).map((name) => ({ [name]: [] })),
    tags: services.map((name) => ({ name, description: `Routes served by the ${name} service.` })),
    ...body,
    ...(missing.length ? { "x-missing-services": missing } : {}),
  };
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** A copy of `doc` with its own schema names and every reference to them renamed. */
function renameRefs(doc: OpenApiDocument, renames: Map<string, string>): OpenApiDocument {
  const prefix = "#/components/schemas/";
  return JSON.parse(JSON.stringify(doc), (key, value: unknown) => {
    if (key === "$ref" && typeof value === "string" && value.startsWith(prefix)) {
      const renamed = renames.get(value.slice(prefix.length));
      return renamed ? prefix + renamed : value;
    }
    return value;
  }) as OpenApiDocument;
}
