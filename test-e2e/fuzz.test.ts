import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { OpenApiDocument } from "@svc/kit";
import { startSuite, type Suite } from "./suite.js";

/**
 * Bad input to every operation of the administration API, driven by the OpenAPI document the
 * gateway serves: a route added tomorrow is fuzzed without writing its cases. Every answer must
 * be a 4xx problem document (never a 5xx, never a success), and nothing may change.
 */
type Schema = { type?: string | string[]; properties?: Record<string, Schema>; required?: string[]; items?: Schema };
type Operation = { parameters?: { in: string; name: string }[]; requestBody?: { content?: Record<string, { schema?: Schema }> } };

const NUL = "a\u0000b";
const BIDI = "libs\u202e";
const CONTROL = "x\u001b[31m";
const HUGE = "x".repeat(200_000);
const TEN_MB = JSON.stringify({ label: "x".repeat(10 * 1024 * 1024) });
const PATH_VALUES = [encodeURIComponent(NUL), encodeURIComponent(BIDI), encodeURIComponent(CONTROL), "x".repeat(5000)];
const QUERY_VALUES = ["after=%ff", "after=%00", `after=${encodeURIComponent(BIDI)}`, "limit=abc", "limit=0", `after=${"y".repeat(5000)}`];
const DATES = ["P999999999999Y", "300000-01-01T00:00:00Z", "+275760-09-13T00:00:00Z"];

const nullable = (s: Schema | undefined) => Array.isArray(s?.type) && s.type.includes("null");

/** Bodies that no schema should take: each string field made hostile, each field the wrong type. */
function badBodies(schema: Schema | undefined): { name: string; body: unknown }[] {
  const out: { name: string; body: unknown }[] = [
    { name: "a string body", body: "text" },
    { name: "an array body", body: [] },
  ];
  if (!nullable(schema)) out.push({ name: "a null body", body: null });
  const props = schema?.properties ?? {};
  // An empty object is bad input only where a field is required.
  if ((schema?.required ?? []).length > 0) out.push({ name: "an empty object", body: {} });
  const base: Record<string, unknown> = {};
  for (const [k, p] of Object.entries(props)) base[k] = p.type === "array" || (Array.isArray(p.type) && p.type.includes("array")) ? [] : p.type === "string" ? "x" : undefined;
  for (const [k, p] of Object.entries(props)) {
    const types = Array.isArray(p.type) ? p.type : [p.type];
    if (types.includes("string")) {
      for (const [what, v] of [["NUL", NUL], ["bidi", BIDI], ["control", CONTROL], ["huge", HUGE]] as const) out.push({ name: `${k} ${what}`, body: { ...base, [k]: v } });
      if (/expir|before|after|until|since|at$/i.test(k)) for (const d of DATES) out.push({ name: `${k} ${d}`, body: { ...base, [k]: d } });
    }
    if (types.includes("array") && p.items?.type === "object") {
      out.push({ name: `${k}[0] all fields NUL`, body: { ...base, [k]: [Object.fromEntries(Object.keys(p.items.properties ?? {}).map((f) => [f, NUL]))] } });
    }
    out.push({ name: `${k} wrong type`, body: { ...base, [k]: types.includes("number") || types.includes("integer") ? "nine" : 9 } });
  }
  return out;
}

describe("fuzzing every administration route from the OpenAPI document", () => {
  let s: Suite;
  beforeAll(async () => {
    s = await startSuite();
  });
  afterAll(async () => {
    await s?.stop();
  });

  it("answers every bad request with a 4xx problem document and changes nothing", { timeout: 300_000 }, async () => {
    const doc = await vi.waitUntil(
      async () => {
        const res = await s.call("GET", "/api/openapi.json", { key: s.bootstrapKey });
        const d = res.status === 200 ? ((await res.json()) as OpenApiDocument) : undefined;
        return d && d["x-missing-services"] === undefined && d;
      },
      { timeout: 30_000, interval: 300 },
    );
    // Something in each list, so a change would show.
    const k = await s.mint({ label: "fuzz-witness", grants: [{ scope: "*", tokens: ["repository:read"] }] });
    expect(k.id).toBeTruthy();

    const operations = Object.entries(doc.paths ?? {}).flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([m]) => ["get", "put", "post", "delete", "patch"].includes(m))
        .map(([method, op]) => ({ path, method: method.toUpperCase(), op: op as unknown as Operation })),
    );
    expect(operations.length).toBeGreaterThan(20);
    // The state an administrator changes; /api/logs grows with every request by design (each
    // request here leaves an access line), so it is no witness of "nothing changed".
    const lists = operations.filter(
      (o) => o.method === "GET" && !o.path.includes("{") && o.path !== "/api/logs" && (o.op.parameters ?? []).some((p) => p.in === "query" && p.name === "after"),
    );
    expect(lists.length).toBeGreaterThan(3);
    const snapshot = async () =>
      Promise.all(lists.map(async (l) => `${l.path} ${await s.call("GET", l.path, { key: s.bootstrapKey }).then(async (r) => `${r.status} ${await r.text()}`)}`));
    const before = await snapshot();

    const bad: string[] = [];
    let sent = 0;
    const expect4xx = async (name: string, method: string, path: string, body?: unknown, raw?: string) => {
      sent++;
      const res = await s.call(method, path, {
        key: s.bootstrapKey,
        ...(raw !== undefined ? { body: raw, headers: { "content-type": "application/json" } } : body !== undefined ? { body: JSON.stringify(body), headers: { "content-type": "application/json" } } : {}),
      });
      const text = await res.text();
      const problemDoc = /^application\/problem\+json/.test(res.headers.get("content-type") ?? "");
      if (res.status < 400 || res.status >= 500 || !problemDoc) bad.push(`${method} ${path.slice(0, 120)} (${name}): ${res.status} ${text.slice(0, 160)}`);
    };
    const fill = (path: string, value: string) => path.replace(/\{[^}]+\}/g, value);

    for (const { path, method, op } of operations) {
      const params = path.includes("{");
      // Bad path parameters (the body, if any, is a valid-looking empty object).
      if (params) for (const v of PATH_VALUES) await expect4xx(`param ${v.slice(0, 12)}`, method, fill(path, v), method === "GET" || method === "DELETE" ? undefined : {});
      const target = fill(path, "fuzz-target");
      if (method === "GET" && (op.parameters ?? []).some((p) => p.in === "query")) {
        for (const q of QUERY_VALUES) await expect4xx(q.slice(0, 20), method, `${target}?${q}`);
      }
      const json = op.requestBody?.content?.["application/json"];
      if (json) {
        for (const b of badBodies(json.schema)) await expect4xx(b.name, method, target, b.body);
        await expect4xx("an empty body", method, target, undefined, "");
        await expect4xx("a 10 MB body", method, target, undefined, TEN_MB);
      }
    }
    // Bounded: a few hundred requests for the whole API.
    expect(sent).toBeGreaterThan(100);
    expect(sent).toBeLessThan(2000);
    console.log(`fuzz: ${operations.length} operations, ${sent} requests, ${bad.length} not a 4xx problem`);
    expect(bad).toEqual([]);
    expect(await snapshot()).toEqual(before);
  });
});
