import { describe, expect, it } from "vitest";
import pino from "pino";
import { apiReport, openApiPath } from "./openapi.js";
import { createBaseApp } from "./service.js";
import { createMetrics } from "./metrics.js";
import { errorResponses } from "./paging.js";

async function serviceWithRoutes() {
  const metrics = createMetrics("sample");
  const app = createBaseApp({ log: pino({ level: "silent" }), internalSecret: "s".repeat(32), metrics });
  app.get("/api/things/:id", { schema: { response: { 200: { type: "object", properties: { id: { type: "string" } } }, ...errorResponses(400, 404, 409) } } }, async () => ({}));
  app.delete("/api/things/:id/tags/*", async () => ({}));
  app.get("/internal/things", async () => ({}));
  await app.ready();
  return { app, metrics };
}

describe("a service's own API description", () => {
  it("describes its /api/ routes with their error responses, and not /internal/ nor /health/", async () => {
    const { app, metrics } = await serviceWithRoutes();
    const report = apiReport(metrics);
    expect(report.service).toBe("sample");
    const doc = report.document!;
    expect(doc.openapi).toMatch(/^3\./);
    expect(Object.keys(doc.paths ?? {}).sort()).toEqual(["/api/things/{id}", "/api/things/{id}/tags/{*}"]);
    const get = doc.paths!["/api/things/{id}"]!.get!;
    expect(Object.keys(get.responses ?? {})).toEqual(expect.arrayContaining(["200", "400", "401", "403", "404", "409", "429", "500"]));
    expect(get.responses?.["404"]).toEqual({ description: "Not Found", content: { "application/problem+json": { schema: { $ref: "#/components/schemas/problem" } } } });
    expect(doc.components?.schemas?.problem).toMatchObject({ type: "object" });
    await app.close();
  });

  it("lists the routes fastify registered, apart from the document", async () => {
    const { app, metrics } = await serviceWithRoutes();
    const routes = apiReport(metrics).routes;
    expect(routes).toEqual([
      { method: "GET", url: "/api/things/:id", statuses: ["200", "400", "401", "403", "404", "409", "429", "500"] },
      { method: "DELETE", url: "/api/things/:id/tags/*", statuses: [] },
    ]);
    expect(routes.map((r) => openApiPath(r.url))).toEqual(["/api/things/{id}", "/api/things/{id}/tags/{*}"]);
    await app.close();
  });

  it("is empty for a process that describes nothing (the gateway forwards its /api/ routes)", async () => {
    const metrics = createMetrics("gateway");
    const app = createBaseApp({ log: pino({ level: "silent" }), metrics });
    app.get("/api/x", async () => ({}));
    await app.ready();
    expect(apiReport(metrics)).toEqual({ node: metrics.node, service: "gateway", document: null, routes: [] });
    await app.close();
  });
});
