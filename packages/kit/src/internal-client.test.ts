import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InternalCallError, internalClient } from "./internal-client.js";
import { verifyIdentity } from "./identity.js";

const secret = "internal-s3cret";

/** An upstream that refuses unsigned calls the way createBaseApp does, then answers by path. */
function upstream(handle: (req: IncomingMessage, body: string, res: ServerResponse) => void): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      const v = verifyIdentity(secret, req.method!, req.url!, req.headers);
      if (!v.ok) {
        res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ reason: v.reason }));
        return;
      }
      res.setHeader("x-principal", `${v.principal.kind}:${v.principal.tenant}:${v.principal.id}`);
      handle(req, body, res);
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })));
}

describe("internalClient", () => {
  let up: { server: Server; url: string };
  let client: ReturnType<typeof internalClient>;

  beforeAll(async () => {
    up = await upstream((req, body, res) => {
      const json = (status: number, value: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
      if (req.url!.startsWith("/echo")) return json(200, { method: req.method, url: req.url, type: req.headers["content-type"] ?? null, body: body ? JSON.parse(body) : null });
      if (req.url === "/empty") return res.writeHead(204).end();
      if (req.url === "/missing") return json(404, { title: "not found" });
      if (req.url!.startsWith("/broken")) return json(500, { title: "failed", reference: "ABCDEF123456" });
      // How every upstream answers a refusal on /internal/ (the text surface).
      if (req.url === "/unknown-key") return res.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end("unknown key\n");
      if (req.url === "/not-json") return res.writeHead(200, { "content-type": "text/plain" }).end("hello");
      if (req.url === "/slow") return; // never answers
      json(404, {});
    });
    client = internalClient({ baseUrl: up.url, service: "test service", internalSecret: secret, tenant: "acme", caller: "walker", timeoutMs: 500 });
  });

  afterAll(async () => {
    await client.close();
    up.server.closeAllConnections();
    await new Promise((r) => up.server.close(r));
  });

  it("signs the exact path it sends, query included, as the caller's system principal", async () => {
    const res = await client.get<{ url: string }>("/echo/a%2Fb?after=x+y&limit=10");
    expect(res.status).toBe(200);
    expect(res.body.url).toBe("/echo/a%2Fb?after=x+y&limit=10");
    expect(res.headers["x-principal"]).toBe("system:acme:walker");
  });

  it("sends a body as JSON and parses the JSON answer", async () => {
    const res = await client.post<{ method: string; type: string; body: unknown }>("/echo", { repository: "libs", path: "a/b" });
    expect(res.body).toEqual({ method: "POST", url: "/echo", type: "application/json", body: { repository: "libs", path: "a/b" } });
  });

  it("answers an empty body as undefined", async () => {
    const res = await client.post("/empty", [], { expect: [204] });
    expect(res).toMatchObject({ status: 204, body: undefined });
  });

  it("returns a status the caller expects as a value, even a 404", async () => {
    const res = await client.get<{ title: string }>("/missing", { expect: [200, 404] });
    expect(res).toMatchObject({ status: 404, body: { title: "not found" } });
  });

  it("returns an expected refusal answered in plain text as a value without a body", async () => {
    const res = await client.get("/unknown-key", { expect: [200, 404] });
    expect(res).toMatchObject({ status: 404, body: undefined });
  });

  it("throws a status the caller did not expect, naming the service and the path without the query", async () => {
    const err = await client.get("/broken?x=1").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InternalCallError);
    expect(err).toMatchObject({ status: 500, message: expect.stringMatching(/^test service answered 500 to GET \/broken: /) });
    expect((err as Error).message).not.toContain(secret);
    await expect(client.get("/empty", { expect: [200] })).rejects.toMatchObject({ status: 204 });
  });

  it("is refused by the upstream when signed with another secret", async () => {
    const other = internalClient({ baseUrl: up.url, service: "test service", internalSecret: "wrong", tenant: "acme", caller: "walker" });
    await expect(other.get("/echo")).rejects.toMatchObject({ status: 401 });
    await other.close();
  });

  it("throws a body that is not JSON, a timeout and a refused connection as InternalCallError without a status", async () => {
    await expect(client.get("/not-json")).rejects.toMatchObject({ name: "InternalCallError", status: undefined, message: expect.stringContaining("not JSON") });
    await expect(client.get("/slow", { timeoutMs: 200 })).rejects.toMatchObject({ status: undefined, message: expect.stringMatching(/^test service did not answer GET \/slow/) });
    const closed = await upstream(() => {});
    await new Promise((r) => closed.server.close(r));
    const gone = internalClient({ baseUrl: closed.url, service: "gone service", internalSecret: secret, tenant: "acme", caller: "gateway" });
    await expect(gone.get("/echo")).rejects.toMatchObject({ status: undefined, message: expect.stringMatching(/^gone service did not answer GET \/echo/) });
    await gone.close();
  });

  it("close() ends a call still waiting for its answer (a shutdown is not held by a peer that never answers)", async () => {
    const own = internalClient({ baseUrl: up.url, service: "test service", internalSecret: secret, tenant: "acme", caller: "walker", timeoutMs: 600_000 });
    const waiting = own.get("/slow").then(
      () => "answered",
      (err: Error) => err.message,
    );
    await new Promise((r) => setTimeout(r, 100));
    await own.close();
    // Settled by the time close() resolved: the call was cut, not left to its ten-minute timeout.
    const settled = await Promise.race([waiting, Promise.resolve("still waiting")]);
    expect(settled).toMatch(/^test service did not answer GET \/slow/);
  });
});
