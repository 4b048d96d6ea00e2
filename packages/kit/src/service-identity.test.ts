// An upstream service's base app (createBaseApp) against captured and altered signed requests,
// sent over a real socket the way the gateway sends them.
import { createHash } from "node:crypto";
import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IDENTITY_BODY_TRAILER } from "@svc/contracts";
import { BODY_IN_TRAILER, identityHeaders, identitySigner } from "./identity.js";
import { createBaseApp, type ServiceApp } from "./service.js";

const current = "c".repeat(32);
const previous = "p".repeat(32);
const principal = "key:default:" + "ab".repeat(32);

interface Sent {
  status: number;
  body: string;
}

/** One request; `trailers` go after a chunked body. */
function send(port: number, method: string, path: string, headers: Record<string, string>, body?: string | string[], trailers?: Record<string, string>): Promise<Sent> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method, path, headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode!, body: text }));
    });
    req.on("error", reject);
    for (const chunk of typeof body === "string" ? [body] : (body ?? [])) req.write(chunk);
    if (trailers) req.addTrailers(trailers);
    req.end();
  });
}

describe("an upstream service's check of the gateway's signature", () => {
  let app: ServiceApp;
  let port: number;
  const stored = new Map<string, string>();

  beforeAll(async () => {
    app = createBaseApp({ log: pino({ level: "silent" }), internalSecret: current, internalSecretPrevious: previous });
    app.post("/api/grants", async (req) => ({ got: req.body }));
    // Like the artifacts store: reads the body stream whole, then commits it.
    app.register(async (raw) => {
      raw.removeAllContentTypeParsers();
      raw.addContentTypeParser("*", (_req, payload, done) => done(null, payload));
      raw.put("/repository/*", async (req, reply) => {
        const chunks: Buffer[] = [];
        for await (const c of req.body as Readable) chunks.push(c as Buffer);
        stored.set(req.url, Buffer.concat(chunks).toString());
        return reply.code(201).send({ stored: true });
      });
    });
    await app.listen({ port: 0, host: "127.0.0.1" });
    port = (app.server.address() as AddressInfo).port;
  });
  afterAll(() => app.close());

  const grant = JSON.stringify({ scope: "default:libs", tokens: ["repository:read"] });
  const json = { "content-type": "application/json" };

  it("serves a signed API call once: the same call replayed is refused", async () => {
    const captured = identityHeaders(current, "POST", "/api/grants", principal, Date.now(), { body: grant, headers: json });
    expect(await send(port, "POST", "/api/grants", captured, grant)).toMatchObject({ status: 200 });
    expect((await send(port, "POST", "/api/grants", captured, grant)).status).toBe(401);
  });

  it("refuses a captured signature with another body, whatever its framing", async () => {
    const forged = JSON.stringify({ scope: "*", tokens: ["*"] });
    const a = identityHeaders(current, "POST", "/api/grants", principal, Date.now(), { body: grant, headers: json });
    expect((await send(port, "POST", "/api/grants", a, forged)).status).toBe(401);
    const b = identityHeaders(current, "POST", "/api/grants", principal, Date.now(), { body: grant, headers: json });
    expect((await send(port, "POST", "/api/grants", { ...b, "transfer-encoding": "chunked" }, [forged.slice(0, 5), forged.slice(5)])).status).toBe(401);
    // A signature for a call without a body, given a body.
    const c = identityHeaders(current, "POST", "/api/grants", principal, Date.now(), { headers: json });
    expect((await send(port, "POST", "/api/grants", c, forged)).status).toBe(401);
  });

  it("refuses a captured signature with a changed Service-Repository-Name or Content-Type", async () => {
    const named = { ...json, "service-repository-name": "default" };
    const a = identityHeaders(current, "POST", "/api/grants", principal, Date.now(), { body: grant, headers: named });
    expect((await send(port, "POST", "/api/grants", { ...a, "service-repository-name": "other" }, grant)).status).toBe(401);
    const b = identityHeaders(current, "POST", "/api/grants", principal, Date.now(), { body: grant, headers: named });
    expect((await send(port, "POST", "/api/grants", { ...b, "content-type": "application/x-www-form-urlencoded" }, grant)).status).toBe(401);
  });

  describe("a streamed upload, bound by the trailer after its body", () => {
    const upload = (path: string, body: string[], trailer: (sig: string, sha256: string) => string | undefined) => {
      const sign = identitySigner(current);
      const headers: Record<string, string> = { "content-type": "application/java-archive", "transfer-encoding": "chunked", trailer: IDENTITY_BODY_TRAILER };
      const sig = sign(headers, "PUT", path, principal, BODY_IN_TRAILER);
      const value = trailer(sig, createHash("sha256").update(body.join("")).digest("base64url"));
      return send(port, "PUT", path, headers, body, value === undefined ? undefined : { [IDENTITY_BODY_TRAILER]: value });
    };

    it("stores the body the trailer vouches for", async () => {
      const sign = identitySigner(current);
      const res = await upload("/repository/default/ok.jar", ["part one, ", "part two"], (sig, sha) => sign.trailer(sig, sha));
      expect(res.status).toBe(201);
      expect(stored.get("/repository/default/ok.jar")).toBe("part one, part two");
    });

    it("stores nothing when the trailer is missing, or vouches for another body", async () => {
      const sign = identitySigner(current);
      expect((await upload("/repository/default/none.jar", ["data"], () => undefined)).status).toBe(401);
      const other = createHash("sha256").update("other data").digest("base64url");
      expect((await upload("/repository/default/other.jar", ["data"], (sig) => sign.trailer(sig, other))).status).toBe(401);
      expect((await upload("/repository/default/key.jar", ["data"], (sig, sha) => identitySigner("k".repeat(32)).trailer(sig, sha))).status).toBe(401);
      expect(stored.has("/repository/default/none.jar") || stored.has("/repository/default/other.jar") || stored.has("/repository/default/key.jar")).toBe(false);
    });
  });

  it("accepts the previous internal secret while a rotation rolls out (svc.internal-secret-previous)", async () => {
    const byPrevious = identityHeaders(previous, "POST", "/api/grants", principal, Date.now(), { body: grant, headers: json });
    expect((await send(port, "POST", "/api/grants", byPrevious, grant)).status).toBe(200);
    const byOther = identityHeaders("o".repeat(32), "POST", "/api/grants", principal, Date.now(), { body: grant, headers: json });
    expect((await send(port, "POST", "/api/grants", byOther, grant)).status).toBe(401);
  });
});
