// Issue 12, item 4 and the refusals in a surface's own format: what the gateway admits is decided on
// the path its router routes on, and every refusal (the HTTP parser's and the router's included)
// comes back as the caller's surface writes errors.
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeKey } from "@svc/keys";
import { startSuite, type Suite } from "./suite.js";

let s: Suite;
beforeAll(async () => {
  s = await startSuite();
  const put = await s.call("PUT", "/repository/default/docs/range.txt", { key: s.bootstrapKey, body: "0123456789" });
  expect(put.status).toBe(201);
});
afterAll(() => s?.stop());

/** Writes `head` on a fresh connection byte for byte and reads the whole answer (the server closes or answers one request). */
function rawExchange(head: string): Promise<{ status: number; headers: string; body: string }> {
  const u = new URL(s.gatewayUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(u.port), u.hostname, () => socket.write(head));
    let text = "";
    socket.setEncoding("latin1");
    socket.on("data", (d: string) => {
      text += d;
      const end = text.indexOf("\r\n\r\n");
      const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end))?.[1];
      if (end >= 0 && length !== undefined && text.length >= end + 4 + Number(length)) socket.end();
    });
    socket.on("error", reject);
    socket.on("close", () => {
      const end = text.indexOf("\r\n\r\n");
      resolve({ status: Number(text.slice(9, 12)), headers: text.slice(0, end), body: text.slice(end + 4) });
    });
  });
}

const get = (target: string, headers = "") => rawExchange(`GET ${target} HTTP/1.1\r\nHost: x\r\n${headers}Connection: close\r\n\r\n`);

describe("request targets", () => {
  it("refuses an absolute-form target with 400 before admission, with or without a key", async () => {
    for (const target of ["http://x/api/credentials", "https://x/metrics", "http://x/repository/default/docs/range.txt"]) {
      const res = await get(target);
      expect(res.status, target).toBe(400);
      expect(res.body).toMatch(/origin-form/);
      const keyed = await get(target, `Service-Repository-Key: ${s.bootstrapKey}\r\n`);
      expect(keyed.status, target).toBe(400);
    }
  });

  it("refuses authority-form and asterisk-form targets with 400", async () => {
    expect((await rawExchange(`CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n`)).status).toBe(400);
    expect((await get("*")).status).toBe(400);
  });

  it("guards a path however it is spelt: percent-encoded letters, a fragment, a trailing slash", async () => {
    // Each of these is routed to a guarded route; none may be served without a key.
    for (const target of ["/%61pi/credentials", "/%6detrics", "/metrics/", "/api/%63redentials"]) {
      const res = await get(target);
      expect(res.status, target).toBe(401);
    }
    for (const target of ["/api#/credentials", "/metrics#", "/repository/default/docs/range.txt#x"]) {
      const res = await get(target);
      expect(res.status, target).toBe(400);
      expect(res.body).toMatch(/fragment/);
    }
  });

  it("refuses dot segments and backslashes that the proxy would resolve, plain or encoded", async () => {
    const key = `Service-Repository-Key: ${s.bootstrapKey}\r\n`;
    for (const target of ["/api/x/../credentials", "/api/%2e%2e/metrics", "/repository/default/docs/..%5c..%5capi", "/repository/default/a\\..\\..\\..\\api\\credentials"]) {
      const res = await get(target, key);
      expect([400], target).toContain(res.status);
    }
  });

  it("a path with the prefix percent-encoded reaches nothing unguarded even with a key", async () => {
    const res = await get("/%72epository/default/docs/range.txt", `Service-Repository-Key: ${s.bootstrapKey}\r\n`);
    expect(res.status).toBe(400);
  });
});

describe("refusals in the surface's own format", () => {
  it("bad percent-encoding: a problem document on /api/, plain text on an artifact path", async () => {
    const api = await get("/api/credentials/%ff", `Service-Repository-Key: ${s.bootstrapKey}\r\n`);
    expect(api.status).toBe(400);
    expect(api.headers).toMatch(/content-type: application\/problem\+json/i);
    expect(JSON.parse(api.body)).toMatchObject({ status: 400, code: "invalid_input" });
    const art = await get("/repository/default/docs/%ff.txt", `Service-Repository-Key: ${s.bootstrapKey}\r\n`);
    expect(art.status).toBe(400);
    expect(art.headers).toMatch(/content-type: text\/plain/i);
    expect(art.body).toMatch(/percent-encoding/);
  });

  it("headers too large: 431 as a problem document on /api/, plain text elsewhere", async () => {
    const big = `X-Filler: ${"a".repeat(20_000)}\r\n`;
    const api = await get("/api/credentials", big);
    expect(api.status).toBe(431);
    expect(api.headers).toMatch(/content-type: application\/problem\+json/i);
    expect(JSON.parse(api.body)).toMatchObject({ status: 431 });
    const art = await get("/repository/default/docs/range.txt", big);
    expect(art.status).toBe(431);
    expect(art.headers).toMatch(/content-type: text\/plain/i);
    expect(art.body).toMatch(/headers are too large/);
  });

  it("a malformed request line is a plain-text 400, not framework JSON", async () => {
    const res = await rawExchange("GET /api/credentials HTTP/1.1\r\nHost x\r\n\r\n");
    expect(res.status).toBe(400);
    expect(res.body).not.toMatch(/"statusCode"/);
  });

  it("an unsatisfiable range is a 416 in plain text with the artifact's size", async () => {
    const res = await s.call("GET", "/repository/default/docs/range.txt", { key: s.bootstrapKey, headers: { range: "bytes=100-200" } });
    expect(res.status).toBe(416);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(res.headers.get("content-range")).toBe("bytes */10");
    expect(await res.text()).toMatch(/range/);
  });

  it("a failed If-Match on a download is a 412 in the caller's format", async () => {
    const res = await s.call("GET", "/repository/default/docs/range.txt", { key: s.bootstrapKey, headers: { "if-match": '"not-the-etag"', accept: "application/json" } });
    expect(res.status).toBe(412);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(((await res.json()) as { error: string }).error).toMatch(/If-Match/);
  });
});

describe("refusals that say what to do next", () => {
  it("tells a caller whose Authorization holds no key that it is not a well-formed key", async () => {
    const res = await s.call("GET", "/api/credentials", { headers: { authorization: "Bearer garbage" } });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/does not hold a well-formed key/);
  });

  it("names the prefix a key holds when it reaches outside it", async () => {
    const k = await s.mint({ grants: [{ scope: "default:docs/public", tokens: ["read-only"] }] });
    const res = await s.call("GET", "/repository/default/docs/range.txt", { key: k.key, headers: { "service-repository-name": "default" } });
    expect(res.status).toBe(403);
    expect(await res.text()).toMatch(/only under default:docs\/public/);
  });

  it("gives an unknown key a next step", async () => {
    const res = await s.call("GET", "/api/credentials", { key: makeKey() });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/^unknown key: .*ask an administrator for a new key/);
  });
});

describe("the Host header", () => {
  const npmDoc = async () => {
    await s.createRepository("hosts-npm", "npm");
    const tgz = Buffer.from("host-pkg tarball");
    const body = { name: "host-pkg", "dist-tags": { latest: "1.0.0" }, versions: { "1.0.0": { name: "host-pkg", version: "1.0.0" } }, _attachments: { "host-pkg-1.0.0.tgz": { data: tgz.toString("base64"), length: tgz.length } } };
    const put = await s.call("PUT", "/repository/hosts-npm/host-pkg", { key: s.bootstrapKey, body });
    expect(put.status, await put.text()).toBe(201);
  };
  let published: Promise<void> | undefined;
  const withPackage = () => (published ??= npmDoc());
  /** Every upstream's own address: none may appear in an answer to a client. */
  const internal = () => Object.values(s.urls).map((u) => new URL(u).host);
  const key = () => `Service-Repository-Key: ${s.bootstrapKey}\r\n`;

  it("an invalid Host is refused with 400 on every route, in the surface's format, and no answer names an internal address", async () => {
    await withPackage();
    const targets = [
      ["/repository/hosts-npm/host-pkg", "Accept: application/json\r\n"],
      ["/repository/default/docs/range.txt", ""],
      ["/api/capabilities", ""],
      ["/health/ready", ""],
    ] as const;
    for (const host of ["a b", "exa mple.com:99999", "example.com:99999", "[::1", "foo@bar", "", "a/b", "x:80:80", "[zz::1]:80", "host\tname"]) {
      for (const [target, accept] of targets) {
        const res = await rawExchange(`GET ${target} HTTP/1.1\r\nHost: ${host}\r\n${key()}${accept}Connection: close\r\n\r\n`);
        const what = `Host: ${JSON.stringify(host)} on ${target}`;
        expect(res.status, what).toBe(400);
        expect(res.body, what).toMatch(/Host/);
        for (const address of internal()) expect(res.headers + res.body, what).not.toContain(address);
        if (target.startsWith("/api/")) expect(JSON.parse(res.body), what).toMatchObject({ status: 400, code: "invalid_input" });
        if (accept !== "") expect(JSON.parse(res.body), what).toHaveProperty("error");
      }
    }
    // Two Host headers name no one host (RFC 9112 3.2): refused too.
    const two = await rawExchange(`GET /repository/hosts-npm/host-pkg HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n${key()}Connection: close\r\n\r\n`);
    expect(two.status).toBe(400);
  });

  it("a request without a Host (HTTP/1.0) never gets an internal address in a tarball URL", async () => {
    await withPackage();
    const res = await rawExchange(`GET /repository/hosts-npm/host-pkg HTTP/1.0\r\n${key()}Accept: application/json\r\n\r\n`);
    for (const address of internal()) expect(res.headers + res.body).not.toContain(address);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body).error).toMatch(/Host/);
  });

  it("a valid Host with a port is what the tarball URLs name", async () => {
    await withPackage();
    for (const host of ["registry.example:8443", "[::1]:4873", "127.0.0.1:9", "Registry.Example", "my_host.internal:80"]) {
      const res = await rawExchange(`GET /repository/hosts-npm/host-pkg HTTP/1.1\r\nHost: ${host}\r\n${key()}Accept: application/json\r\nConnection: close\r\n\r\n`);
      expect(res.status, host).toBe(200);
      const doc = JSON.parse(res.body) as { versions: Record<string, { dist: { tarball: string } }> };
      expect(doc.versions["1.0.0"]!.dist.tarball, host).toBe(`http://${host}/repository/hosts-npm/host-pkg/-/host-pkg-1.0.0.tgz`);
    }
  });
});
