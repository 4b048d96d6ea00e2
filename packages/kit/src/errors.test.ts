import { Writable } from "node:stream";
import Fastify from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceError, problem } from "@svc/contracts";
import { installErrorHandling, renderProblem, surfaceOf } from "./errors.js";

const REF = /^[0-9A-Z]{12}$/;

describe("surfaceOf", () => {
  it("tells the API, container routes, package clients asking for JSON and everything else apart", () => {
    expect(surfaceOf("/api/credentials")).toBe("api");
    expect(surfaceOf("/api")).toBe("api");
    expect(surfaceOf("/apix")).toBe("text");
    expect(surfaceOf("/v2/library/app/manifests/1")).toBe("oci");
    expect(surfaceOf("/repository/npm/left-pad", "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*")).toBe("package");
    expect(surfaceOf("/repository/npm/left-pad", ["application/json"])).toBe("package");
    expect(surfaceOf("/repository/maven/a.jar", "*/*")).toBe("text");
    expect(surfaceOf("/repository/maven/a.jar")).toBe("text");
    // A publish: npm sends no JSON Accept, but prints the `error` of a JSON answer.
    expect(surfaceOf("/repository/npm/left-pad", "*/*", "npm/11.6.2 node/v20.20.2 linux x64 workspaces/false")).toBe("package");
    expect(surfaceOf("/repository/npm/left-pad", undefined, "pnpm/10.34.8 npm/? node/v20.20.2 linux x64")).toBe("package");
    expect(surfaceOf("/repository/npm/left-pad", undefined, "yarn/1.22.22 npm/? node/v20.20.2 linux x64")).toBe("package");
    expect(surfaceOf("/repository/raw/a.txt", "*/*", "curl/8.5.0")).toBe("text");
    // cargo: its registry API's error body, on the index and downloads too (it prints the body of a failed fetch).
    expect(surfaceOf("/repository/crates/api/v1/crates/new", undefined, "cargo/1.95.0 (f2d3ce0bd 2026-03-21)")).toBe("cargo");
    expect(surfaceOf("/repository/crates/config.json", "*/*", "cargo/1.95.0 (f2d3ce0bd 2026-03-21)")).toBe("cargo");
    expect(surfaceOf("/api/credentials", undefined, "cargo/1.95.0")).toBe("api");
    expect(renderProblem("cargo", problem("forbidden", "this key does not hold repository:write on *"))).toEqual({ type: "application/json", body: '{"errors":[{"detail":"this key does not hold repository:write on *"}]}' });
    expect(surfaceOf("/api/credentials", undefined, "npm/11.6.2")).toBe("api");
    // Asking for JSON does not turn other surfaces into package documents.
    expect(surfaceOf("/api/logs", "application/json")).toBe("api");
    expect(surfaceOf("/health/live", "application/json")).toBe("text");
  });
});

describe("errors on every surface", () => {
  const lines: string[] = [];
  const app = Fastify({
    logger: {
      level: "info",
      stream: new Writable({
        write(chunk, _enc, done) {
          lines.push(String(chunk));
          done();
        },
      }),
    },
  });
  installErrorHandling(app);
  for (const prefix of ["/api", "/v2", "/repository", "/other"]) {
    app.get(`${prefix}/boom`, async () => {
      throw new Error("ENOENT: /var/lib/store/secret-path");
    });
    app.get(`${prefix}/refused`, async () => {
      throw new ServiceError("forbidden", "this key may not write here");
    });
  }
  beforeAll(() => app.ready());
  afterAll(() => app.close());

  const get = (url: string, accept?: string) => app.inject({ method: "GET", url, headers: accept ? { accept } : {} });

  it("answers an unexpected failure with a reference in each surface's own format, and logs the stack under it", async () => {
    const api = await get("/api/boom");
    expect(api.statusCode).toBe(500);
    expect(api.headers["content-type"]).toMatch(/^application\/problem\+json/);
    const problem = api.json() as { title: string; reference: string };
    expect(problem.title).toBe("Unexpected failure");
    expect(problem.reference).toMatch(REF);

    const oci = await get("/v2/boom");
    expect(oci.statusCode).toBe(500);
    const ociBody = oci.json() as { errors: { code: string; message: string; detail: { reference: string } }[] };
    expect(ociBody.errors[0]?.code).toBe("UNKNOWN");
    expect(ociBody.errors[0]?.detail.reference).toMatch(REF);
    expect(ociBody.errors[0]?.message).toBe(`Unexpected failure. Reference: ${ociBody.errors[0]?.detail.reference}`);

    const pkg = await get("/repository/boom", "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*");
    expect(pkg.statusCode).toBe(500);
    expect(pkg.headers["content-type"]).toMatch(/^application\/json/);
    const doc = pkg.json() as { error: string; reference: string };
    expect(doc.reference).toMatch(REF);
    expect(doc.error).toBe(`Unexpected failure. Reference: ${doc.reference}`);

    const text = await get("/repository/boom");
    expect(text.statusCode).toBe(500);
    expect(text.headers["content-type"]).toMatch(/^text\/plain/);
    const ref = /^Unexpected failure\. Reference: ([0-9A-Z]{12})\n$/.exec(text.body)?.[1];
    expect(ref).toMatch(REF);

    for (const res of [api, oci, pkg, text]) expect(res.body).not.toMatch(/ENOENT|\/var\/lib|secret-path|at /);
    for (const reference of [problem.reference, ociBody.errors[0]?.detail.reference, doc.reference, ref]) {
      const line = lines.find((l) => l.includes(`Unexpected failure ${reference} while GET /`));
      expect(line, reference).toBeDefined();
      const entry = JSON.parse(line!) as { level: number; err: { stack: string } };
      expect(entry.level).toBe(50);
      expect(entry.err.stack).toMatch(/ENOENT/);
    }
    expect(new Set([problem.reference, ociBody.errors[0]?.detail.reference, doc.reference, ref]).size).toBe(4);
  });

  it("says why it refused, with no reference, in the same formats", async () => {
    const api = (await get("/api/refused")).json() as Record<string, unknown>;
    expect(api.detail).toBe("this key may not write here");
    expect(api.reference).toBeUndefined();
    const oci = (await get("/v2/refused")).json() as { errors: { code: string; message: string }[] };
    expect(oci.errors[0]).toMatchObject({ code: "DENIED", message: "this key may not write here" });
    const pkg = await get("/repository/refused", "application/json");
    expect(pkg.statusCode).toBe(403);
    expect(pkg.json()).toEqual({ error: "this key may not write here" });
    const text = await get("/other/refused", "application/json");
    expect(text.statusCode).toBe(403);
    expect(text.body).toBe("this key may not write here\n");
  });
});
