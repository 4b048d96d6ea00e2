// The per-caller cap on request bodies under way and the idle cut, on a bare fastify app.
import { connect, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addressMatcher, installErrorHandling } from "@svc/kit";
import { bodyGuardFactory } from "./body-guard.js";

const guard = bodyGuardFactory({ idleMs: 0, perCaller: 2, trustedProxies: addressMatcher([]) });
let app: FastifyInstance;
let port = 0;

beforeAll(async () => {
  app = Fastify();
  installErrorHandling(app);
  app.decorateRequest("forwardedPrincipal", "");
  app.addHook("onRequest", (request, _reply, done) => {
    request.forwardedPrincipal = String(request.headers["x-who"]);
    // As admission classifies them: /api/... is administration, anything else an artifact.
    request.target = (request.url.startsWith("/api/") ? { kind: "api" } : { kind: "artifact" }) as typeof request.target;
    done();
  });
  app.addHook("onRequest", guard.guard);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", (_req, payload, done) => done(null, payload));
  app.put("/*", async (request) => {
    for await (const _ of request.body as AsyncIterable<Buffer>);
    return "stored";
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  port = (app.server.address() as AddressInfo).port;
});
afterAll(() => app?.close());

const stall = (who: string): Socket => {
  const s = connect({ host: "127.0.0.1", port });
  s.on("error", () => {});
  s.write(`PUT /x HTTP/1.1\r\nHost: x\r\nx-who: ${who}\r\nContent-Length: 100\r\n\r\nabc`);
  return s;
};
const put = (who: string) => fetch(`http://127.0.0.1:${port}/y`, { method: "PUT", headers: { "x-who": who }, body: "body" });
async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 400 && !(await check()); i++) await new Promise((r) => setTimeout(r, 25));
}

describe("request bodies under way", () => {
  it("refuses a caller's body beyond the cap with 429 and Retry-After, and counts it free once its client is gone", async () => {
    const a = stall("key:t:a");
    const b = stall("key:t:a");
    await until(() => guard.underWay().get("key:t:a") === 2);
    const refused = await put("key:t:a");
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect((await put("key:t:b")).status).toBe(200);
    a.destroy();
    await until(() => guard.underWay().get("key:t:a") === 1);
    expect((await put("key:t:a")).status).toBe(200);
    b.destroy();
    await until(() => !guard.underWay().has("key:t:a"));
    expect(guard.underWay().size).toBe(0);
  });

  it("does not cap administration bodies: a caller at its upload cap can still send them", async () => {
    const a = stall("key:t:c");
    const b = stall("key:t:c");
    await until(() => guard.underWay().get("key:t:c") === 2);
    const api = await fetch(`http://127.0.0.1:${port}/api/groups/g/members`, { method: "PUT", headers: { "x-who": "key:t:c" }, body: "{}" });
    expect(api.status).toBe(200);
    a.destroy();
    b.destroy();
    await until(() => !guard.underWay().has("key:t:c"));
    expect(guard.underWay().size).toBe(0);
  });
});
