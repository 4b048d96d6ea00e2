import Fastify from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installErrorHandling } from "./errors.js";
import { installInputGuard } from "./input-guard.js";

describe("the input guard and validation messages", () => {
  // The ajv options createBaseApp gives every service.
  const app = Fastify({ ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false } } });
  installErrorHandling(app);
  installInputGuard(app);
  const stored: unknown[] = [];
  const body = {
    type: "object",
    required: ["label", "grants"],
    additionalProperties: false,
    properties: {
      label: { type: "string" },
      format: { type: "string", enum: ["raw", "npm", "maven", "pypi"] },
      grants: { type: "array", items: { type: "object", additionalProperties: false, properties: { scope: { type: "string" } } } },
    },
  };
  app.post("/api/things/:name", { schema: { body } }, async (req) => {
    stored.push(req.body);
    return { ok: true };
  });
  app.get("/api/things", async (req) => ({ query: req.query }));
  app.get("/repository/:repo/*", async () => ({ ok: true }));
  beforeAll(() => app.ready());
  afterAll(() => app.close());

  const post = (payload: string, name = "x") =>
    app.inject({ method: "POST", url: `/api/things/${name}`, headers: { "content-type": "application/json" }, payload });
  const problem = (res: { statusCode: number; json: () => unknown }) => ({ status: res.statusCode, ...(res.json() as { detail: string; field: string }) });

  it("refuses NUL, control and bidirectional characters in a body string, naming the field, and stores nothing", async () => {
    for (const [text, field] of [
      [JSON.stringify({ label: "a\u0000b", grants: [] }), "label"],
      [JSON.stringify({ label: "ok", grants: [{ scope: "libs\u202e" }] }), "grants[0].scope"],
      [JSON.stringify({ label: "\u001b[31m", grants: [] }), "label"],
      [JSON.stringify({ label: "\ud800", grants: [] }), "label"],
    ] as const) {
      expect(problem(await post(text)), text).toMatchObject({ status: 400, field });
    }
    expect(stored).toEqual([]);
    // Free text may keep tabs and line breaks.
    expect((await post(JSON.stringify({ label: "two\nlines\tand a tab", grants: [] }))).statusCode).toBe(200);
  });

  it("refuses them in path parameters and the query, and refuses a query that is not valid percent-encoding", async () => {
    expect(problem(await post(JSON.stringify({ label: "a", grants: [] }), "a%00b"))).toMatchObject({ status: 400, field: "name" });
    expect(problem(await app.inject({ method: "GET", url: "/api/things?after=%00" }))).toMatchObject({ status: 400, field: "after" });
    expect(problem(await app.inject({ method: "GET", url: "/api/things?after=%ff" }))).toMatchObject({ status: 400, field: "query" });
    const artifact = await app.inject({ method: "GET", url: "/repository/libs/a%00b" });
    expect([artifact.statusCode, artifact.body]).toEqual([400, "path holds a control or bidirectional-override character\n"]);
    expect((await app.inject({ method: "GET", url: "/api/things?after=caf%C3%A9" })).statusCode).toBe(200);
  });

  it("names fields as the caller wrote them, without an internal body/ prefix", async () => {
    const wrongType = problem(await post(JSON.stringify({ label: 5, grants: [] })));
    expect(wrongType).toMatchObject({ status: 400, field: "label", detail: "label must be string" });
    const nested = problem(await post(JSON.stringify({ label: "a", grants: [{ scope: 1 }] })));
    expect(nested).toMatchObject({ field: "grants[0].scope", detail: "grants[0].scope must be string" });
    const unknown = problem(await post(JSON.stringify({ label: "a", grants: [{ scope: "x", extra: 1 }] })));
    expect(unknown).toMatchObject({ field: "grants[0].extra", detail: 'unknown field "grants[0].extra"' });
    const missing = problem(await post(JSON.stringify({ grants: [] })));
    expect(missing).toMatchObject({ field: "label", detail: 'the body lacks the required field "label"' });
    const notAllowed = problem(await post(JSON.stringify({ label: "a", format: "docker", grants: [] })));
    expect(notAllowed).toMatchObject({ status: 400, field: "format", detail: "format must be one of raw, npm, maven, pypi" });
    for (const p of [wrongType, nested, unknown, missing, notAllowed]) expect(p.detail).not.toMatch(/body\//);
  });

  it("refuses an empty JSON body and a null one, naming the body", async () => {
    expect(problem(await post(""))).toMatchObject({ status: 400, field: "body" });
    expect(problem(await post("null"))).toMatchObject({ status: 400, field: "body" });
    expect(stored).toEqual([{ label: "two\nlines\tand a tab", grants: [] }]);
  });
});
