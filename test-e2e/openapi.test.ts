import SwaggerParser from "@apidevtools/swagger-parser";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { controlSubjects, createBus, createLogger, openApiPath, type ApiReport, type Bus, type OpenApiDocument } from "@svc/kit";
import { startSuite, type Suite } from "./suite.js";

/** The services the gateway forwards /api/ routes to. */
const API_SERVICES = ["admin", "artifacts", "auth", "notifier", "walker"];
const HTTP_METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

describe("the API describes itself at /api/openapi.json", () => {
  let s: Suite;
  let bus: Bus;
  // Administrators read it with manage:read alone.
  let reader: { key: string };
  const served = async (key = reader.key) => {
    const res = await s.call("GET", "/api/openapi.json", { key });
    expect(res.status).toBe(200);
    return (await res.json()) as OpenApiDocument;
  };
  const settled = { timeout: 20_000, interval: 300 };
  const complete = () => vi.waitUntil(async () => served().then((d) => d["x-missing-services"] === undefined && d), settled);

  beforeAll(async () => {
    s = await startSuite();
    reader = await s.mint({ grants: [{ scope: "*", tokens: ["manage:read"] }] });
    bus = createBus({ url: s.natsUrl, tenant: s.tenant, name: "openapi-test", log: createLogger("openapi-test", "silent").log });
  });
  afterAll(async () => {
    await bus?.close();
    await s?.stop();
  });

  it("holds every /api/ route every service registered, with its method and its error responses", async () => {
    // What fastify registered, as each process reports it beside its document: not the generator's output.
    const subject = controlSubjects(s.internalSecret).openapi;
    const reports = await vi.waitUntil(async () => {
      const rs = (await bus.gather(subject, {}, 1000)) as ApiReport[];
      return API_SERVICES.every((name) => rs.some((r) => r.service === name && r.routes.length > 0)) && rs;
    }, settled);
    const registered = new Map<string, ApiReport["routes"]>();
    for (const r of reports) if (API_SERVICES.includes(r.service) && !registered.has(r.service)) registered.set(r.service, r.routes);
    expect([...registered.keys()].sort()).toEqual(API_SERVICES);

    const doc = await complete();
    expect(doc["x-missing-services"]).toBeUndefined();
    const absent: string[] = [];
    const withoutErrors: string[] = [];
    const undeclared: string[] = [];
    const described = new Set<string>();
    for (const [service, routes] of registered) {
      for (const route of routes) {
        const name = `${service}: ${route.method} ${route.url}`;
        const path = openApiPath(route.url);
        described.add(`${route.method.toLowerCase()} ${path}`);
        const op = doc.paths?.[path]?.[route.method.toLowerCase()];
        if (!op) {
          absent.push(name);
          continue;
        }
        const statuses = Object.keys(op.responses ?? {}).map((code) => code.toLowerCase());
        if (!statuses.some((code) => /^[45]/.test(code))) withoutErrors.push(name);
        for (const code of route.statuses) if (!statuses.includes(code.toLowerCase())) undeclared.push(`${name} ${code}`);
      }
    }
    // Nothing in the document that no service registered.
    const extra = Object.entries(doc.paths ?? {}).flatMap(([path, ops]) =>
      Object.keys(ops)
        .filter((m) => HTTP_METHODS.includes(m) && !described.has(`${m} ${path}`))
        .map((m) => `${m} ${path}`),
    );
    expect(absent).toEqual([]);
    expect(undeclared).toEqual([]);
    expect(extra).toEqual([]);
    expect(withoutErrors).toEqual([]);
  });

  it("is a valid OpenAPI 3 document with the key's three forms as security and the gateway as server", async () => {
    const doc = await complete();
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    expect(doc.servers).toEqual([expect.objectContaining({ url: "/" })]);
    expect(Object.values((doc.components?.securitySchemes ?? {}) as Record<string, unknown>)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: "apiKey", in: "header", name: "Service-Repository-Key" }),
        expect.objectContaining({ type: "http", scheme: "bearer" }),
        expect.objectContaining({ type: "http", scheme: "basic" }),
      ]),
    );
    expect(doc.components?.schemas?.problem).toBeDefined();
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy();
  });

  it("needs manage:read over *: refused without a key (401) and with a key lacking it (403)", async () => {
    expect((await s.call("GET", "/api/openapi.json")).status).toBe(401);
    const deploy = await s.mint({ grants: [{ scope: "*", tokens: ["deploy"] }] });
    expect((await s.call("GET", "/api/openapi.json", { key: deploy.key })).status).toBe(403);
    expect((await served()).paths?.["/api/openapi.json"]?.get).toBeDefined();
  });

  it("answers what it knows and names a service that does not answer", async () => {
    await s.stopService("notifier");
    try {
      const doc = await served();
      expect(doc["x-missing-services"]).toEqual(["notifier"]);
      expect(Object.keys(doc.paths ?? {}).some((p) => p.startsWith("/api/webhooks"))).toBe(false);
      expect(doc.paths?.["/api/credentials"]).toBeDefined();
    } finally {
      await s.startService("notifier");
    }
  });
});
