import { describe, expect, it } from "vitest";
import type { ApiReport, OpenApiDocument } from "@svc/kit";
import { mergeApiDocuments } from "./openapi-merge.js";

const problem = { type: "object", properties: { code: { type: "string" } } };
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

function report(service: string, paths: OpenApiDocument["paths"], schemas: Record<string, unknown> = { problem }, node = `${service}@h:1`): ApiReport {
  return { node, service, routes: [], document: { openapi: "3.1.0", info: { title: service, version: "1" }, paths, components: { schemas } } };
}

describe("the deployment's merged API description", () => {
  it("holds every service's paths, tagged by service, with the key's three forms as security", () => {
    const doc = mergeApiDocuments(
      [
        report("auth", { "/api/credentials": { get: { responses: { 401: { content: { "application/problem+json": { schema: ref("problem") } } } } } } }),
        report("walker", { "/api/walks": { post: { tags: ["walks"], responses: {} } } }),
      ],
      ["auth", "walker"],
    );
    expect(doc.openapi).toMatch(/^3\.1/);
    expect(doc.info.title).toBeTruthy();
    expect(doc.info.version).toMatch(/^[0-9a-f]{12}$/);
    expect(doc.paths!["/api/credentials"]!.get!.tags).toEqual(["auth"]);
    expect(doc.paths!["/api/walks"]!.post!.tags).toEqual(["walks"]);
    expect(doc.components!.schemas).toEqual({ problem });
    expect(doc.components!.securitySchemes).toMatchObject({
      repositoryKey: { type: "apiKey", in: "header", name: "Service-Repository-Key" },
      bearer: { type: "http", scheme: "bearer" },
      basic: { type: "http", scheme: "basic" },
    });
    expect(doc.security).toEqual([{ repositoryKey: [] }, { bearer: [] }, { basic: [] }]);
    expect(doc.servers).toEqual([expect.objectContaining({ url: "/" })]);
    expect(doc["x-missing-services"]).toBeUndefined();
  });

  it("names the services that did not answer instead of failing", () => {
    const doc = mergeApiDocuments([report("auth", {}), { node: "walker@h:2", service: "walker", document: null, routes: [], error: "not ready" }], ["auth", "walker", "notifier"]);
    expect(doc["x-missing-services"]).toEqual(["walker", "notifier"]);
  });

  it("takes one answer per service kind and ignores processes that describe nothing", () => {
    const one = report("auth", { "/api/groups": { get: { responses: {} } } }, { problem }, "auth@a:1");
    const replica = report("auth", { "/api/groups": { get: { responses: {} } } }, { problem }, "auth@b:1");
    const gateway: ApiReport = { node: "gateway@a:1", service: "gateway", document: null, routes: [] };
    const doc = mergeApiDocuments([one, replica, gateway], ["auth"]);
    expect(Object.keys(doc.paths!)).toEqual(["/api/groups"]);
    expect(doc.tags).toEqual([expect.objectContaining({ name: "auth" })]);
  });

  it("keeps two services' different schemas of one name apart", () => {
    const page = (field: string) => ({ type: "object", properties: { [field]: { type: "string" } } });
    const doc = mergeApiDocuments(
      [
        report("auth", { "/api/groups": { get: { responses: { 200: { content: { "application/json": { schema: ref("page") } } } } } } }, { problem, page: page("group") }),
        report("walker", { "/api/walks": { get: { responses: { 200: { content: { "application/json": { schema: ref("page") } } } } } } }, { problem, page: page("walk") }),
      ],
      ["auth", "walker"],
    );
    expect(doc.components!.schemas).toEqual({ problem, page: page("group"), "walker-page": page("walk") });
    expect(JSON.stringify(doc.paths!["/api/walks"])).toContain("#/components/schemas/walker-page");
    expect(JSON.stringify(doc.paths!["/api/groups"])).toContain('#/components/schemas/page"');
  });
});
