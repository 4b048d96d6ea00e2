import { existsSync, mkdtempSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { failureOf } from "./api-client.js";
import { EXIT } from "./cli-errors.js";
import { expiringSoon } from "./commands/credentials-command.js";
import { grantBody, parseGrantSpec } from "./grant-specs.js";
import { resolveKey } from "./key-source.js";
import { runCli } from "./main.js";
import { progressBar } from "./progress-bar.js";
import { renderTable } from "./table-output.js";

const problem = (status: number, body: unknown, type = "application/problem+json") =>
  new Response(typeof body === "string" ? body : JSON.stringify(body), { status, headers: { "content-type": type } });

describe("what the client says about an answer that is not a success", () => {
  it("a refusal quotes the server's title and detail and exits 3", async () => {
    const e = await failureOf("GET", "/api/credentials?limit=5", problem(403, { title: "Forbidden", detail: "this key lacks manage:read on *" }));
    expect(e.exitCode).toBe(EXIT.refused);
    expect(e.message).toBe("Refused (403) GET /api/credentials: Forbidden: this key lacks manage:read on *");
  });

  it("an unexpected failure is one sentence ending with the reference and exits 4, from a problem document or plain text", async () => {
    const doc = await failureOf("GET", "/api/logs", problem(503, { title: "Service unavailable", reference: "ABCDEF123456" }));
    expect(doc.exitCode).toBe(EXIT.unexpected);
    expect(doc.message).toBe("The server failed unexpectedly while GET /api/logs (503 Service unavailable). Reference: ABCDEF123456");
    const text = await failureOf("PUT", "/repository/default/a", problem(500, "Unexpected failure. Reference: ZXCVBN098765", "text/plain"));
    expect(text.message).toMatch(/\(500\)\. Reference: ZXCVBN098765$/);
    const proxy = await failureOf("GET", "/api/posture", problem(502, "<html>Bad gateway</html>", "text/html"));
    expect(proxy.exitCode).toBe(EXIT.unexpected);
    expect(proxy.message).toMatch(/gave no reference/);
  });
});

describe("grants, expiry marks, tables", () => {
  it("reads a grant spec and refuses a malformed one", () => {
    expect(parseGrantSpec("libs:com/acme=deploy,cache:read")).toEqual({ scope: "libs:com/acme", tokens: ["deploy", "cache:read"] });
    expect(() => parseGrantSpec("deploy")).toThrow(/<scope>=<token>/);
    expect(grantBody(["*", "manage:read,manage:write"], undefined)).toEqual({ scope: "*", tokens: ["manage:read", "manage:write"] });
    expect(() => grantBody(["*"], undefined)).toThrow(/at least one right/);
  });

  it("marks active keys that expire within 14 days, not later ones, expired ones or revoked ones", () => {
    const now = Date.parse("2030-01-01T00:00:00Z");
    const at = (days: number) => new Date(now + days * 86_400_000).toISOString();
    expect(expiringSoon({ state: "active", expires: at(13.9) }, now)).toBe(true);
    expect(expiringSoon({ state: "active", expires: at(14.1) }, now)).toBe(false);
    expect(expiringSoon({ state: "active", expires: null }, now)).toBe(false);
    expect(expiringSoon({ state: "revoked", expires: at(3) }, now)).toBe(false);
    expect(expiringSoon({ state: "expired", expires: at(-1) }, now)).toBe(false);
  });

  it("shows the server's expiring mark when the server sends one, computing it only for a server that does not", () => {
    const now = Date.parse("2030-01-01T00:00:00Z");
    const soon = new Date(now + 3 * 86_400_000).toISOString();
    expect(expiringSoon({ state: "active", expires: soon, expiringSoon: false }, now)).toBe(false);
    expect(expiringSoon({ state: "active", expires: null, expiringSoon: true }, now)).toBe(true);
  });

  it("pads columns to the widest cell and keeps each row on one line", () => {
    expect(renderTable([{ a: "x", b: "two\nlines" }, { a: "longer", b: "y" }], [{ header: "A", cell: (r) => r.a }, { header: "B", cell: (r) => r.b }])).toBe(
      "A       B\nx       two lines\nlonger  y",
    );
  });

  it("draws nothing when disabled, and a full bar at the end when enabled", () => {
    const out = new PassThrough();
    let text = "";
    out.on("data", (d: Buffer) => (text += d.toString()));
    const off = progressBar({ label: "up", total: 10, stream: out, enabled: false });
    off.add(10);
    off.done();
    expect(text).toBe("");
    const on = progressBar({ label: "up", total: 2048, stream: out, enabled: true });
    on.add(2048);
    on.done();
    expect(text).toMatch(/\rup \[#{24}\] 100% 2\.0 KiB \/ 2\.0 KiB .*\n$/);
  });
});

describe("where the key comes from", () => {
  const stdin = (text: string) => {
    const s = new PassThrough();
    s.end(text);
    return s;
  };

  it("takes --key-file (- is standard input) first, then --key, then SVC_KEY_FILE, then SVC_KEY", async () => {
    expect(await resolveKey({ keyFile: "-", key: "k2", env: { SVC_KEY: "k4" }, stdin: stdin("\n  k1  \n") })).toBe("k1");
    expect(await resolveKey({ key: "k2", env: { SVC_KEY: "k4" }, stdin: stdin("") })).toBe("k2");
    expect(await resolveKey({ env: { SVC_KEY: "k4" }, stdin: stdin("") })).toBe("k4");
    expect(await resolveKey({ env: {}, stdin: stdin("") })).toBeUndefined();
    await expect(resolveKey({ keyFile: "/nonexistent/key", env: {}, stdin: stdin("") })).rejects.toThrow(/Cannot read the key from \/nonexistent\/key/);
    await expect(resolveKey({ env: { SVC_KEY: "two words" }, stdin: stdin("") })).rejects.toThrow(/not a key/);
  });
});

describe("the command line", () => {
  const run = async (argv: string[], env: Record<string, string> = {}) => {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let out = "";
    let err = "";
    stdout.on("data", (d: Buffer) => (out += d.toString()));
    stderr.on("data", (d: Buffer) => (err += d.toString()));
    const code = await runCli({ argv, env, stdin: new PassThrough(), stdout, stderr, signal: new AbortController().signal, stopsGracefully() {} });
    return { code, out, err };
  };

  it("answers help without a key or a server, and wrong usage with exit 2", async () => {
    expect((await run(["--help"])).code).toBe(0);
    const sub = await run(["credentials", "mint", "--help"]);
    expect(sub.code).toBe(0);
    expect(sub.out).toMatch(/--grant <scope=tokens> \(repeatable\)/);
    expect(await run(["nope"])).toMatchObject({ code: EXIT.usage, err: expect.stringMatching(/^svc: Unknown command "nope"/) });
    expect(await run(["credentials", "nope"])).toMatchObject({ code: EXIT.usage });
    expect(await run(["credentials", "list", "--nope"])).toMatchObject({ code: EXIT.usage, err: expect.stringMatching(/--nope/) });
    expect(await run(["credentials", "revoke", "abc"])).toMatchObject({ code: EXIT.usage, err: expect.stringMatching(/not a key id/) });
    expect(await run(["posture", "--url", "ftp://x"])).toMatchObject({ code: EXIT.usage, err: expect.stringMatching(/not an http\(s\) URL/) });
  });

  it("sets a repository's storage quota from a size with a unit, removes it with none, and refuses a size it cannot read", async () => {
    const bodies: unknown[] = [];
    const server = createServer((req, res) => {
      let raw = "";
      req.on("data", (c: Buffer) => (raw += c.toString()));
      req.on("end", () => {
        const body = JSON.parse(raw) as { quotaBytes: number | null };
        bodies.push({ method: req.method, url: req.url, body });
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ name: "team-npm", format: "npm", created: "2026-01-01T00:00:00Z", artifacts: 3, bytes: 2048, usedBytes: 2048, quotaBytes: body.quotaBytes }));
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const key = "svck_default.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    try {
      expect(await run(["repositories", "set-quota", "team-npm", "10GiB", "--url", url], { SVC_KEY: key })).toMatchObject({ code: 0, out: expect.stringContaining("Storage of team-npm: 2.0 KiB of 10.0 GiB quota (2048 of 10737418240).") });
      expect(await run(["repositories", "set-quota", "team-npm", "none", "--url", url], { SVC_KEY: key })).toMatchObject({ code: 0, out: expect.stringContaining("Storage of team-npm: 2.0 KiB, no quota.") });
      expect(bodies).toEqual([
        { method: "PATCH", url: "/api/repositories/team-npm", body: { quotaBytes: 10 * 1024 ** 3 } },
        { method: "PATCH", url: "/api/repositories/team-npm", body: { quotaBytes: null } },
      ]);
      expect(await run(["repositories", "set-quota", "team-npm", "lots", "--url", url], { SVC_KEY: key })).toMatchObject({ code: EXIT.usage, err: expect.stringMatching(/not a storage quota: lots/) });
      expect(bodies).toHaveLength(2);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  describe("against a server that redirects", () => {
    let server: Server;
    let url = "";
    const seen: IncomingHttpHeaders[] = [];
    const key = "svck_default.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    beforeAll(async () => {
      server = createServer((req, res) => {
        seen.push(req.headers);
        res.writeHead(req.url?.startsWith("/repository/") ? 302 : 301, { location: "https://other:hunter2@elsewhere.example/login" }).end();
      });
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((r) => server.close(() => r())));

    it("a 3xx is a refusal naming where it pointed (without credentials), with no file written and no JSON error", async () => {
      const dir = mkdtempSync(join(tmpdir(), "svc-cli-"));
      const out = join(dir, "app.jar");
      const fetched = await run(["fetch", "default/com/acme/app.jar", "--output", out, "--url", url], { SVC_KEY: key });
      expect(fetched.code).toBe(EXIT.refused);
      expect(fetched.err).toMatch(/Refused \(302\) GET \/repository\/default\/com\/acme\/app\.jar: the server answered with a redirect to https:\/\/elsewhere\.example\/login/);
      expect(existsSync(out)).toBe(false);
      expect(existsSync(`${out}.part`)).toBe(false);
      const listed = await run(["credentials", "list", "--url", url], { SVC_KEY: key });
      expect(listed.code).toBe(EXIT.refused);
      expect(listed.err).toMatch(/Refused \(301\) GET \/api\/credentials: the server answered with a redirect/);
      expect(listed.err).not.toMatch(/JSON|hunter2/);
    });

    it("never prints a password given in SVC_URL, and sends it only as Basic sign-in to that server", async () => {
      const withPassword = url.replace("http://", "http://ops:s3cret-pw@");
      const refused = await run(["posture"], { SVC_KEY: key, SVC_URL: withPassword });
      expect(refused.code).toBe(EXIT.refused);
      expect(refused.err + refused.out).not.toMatch(/s3cret-pw/);
      expect(seen.at(-1)?.authorization).toBe(`Basic ${Buffer.from("ops:s3cret-pw").toString("base64")}`);
      const closed = `http://ops:s3cret-pw@127.0.0.1:1`;
      const unreachable = await run(["posture"], { SVC_KEY: key, SVC_URL: closed });
      expect(unreachable.code).toBe(EXIT.unreachable);
      expect(unreachable.err).toMatch(/Could not reach http:\/\/127\.0\.0\.1:1\//);
      expect(unreachable.err).not.toMatch(/s3cret-pw/);
      const malformed = await run(["posture"], { SVC_KEY: key, SVC_URL: "http://ops:s3cret-pw@bad host/" });
      expect(malformed.code).toBe(EXIT.usage);
      expect(malformed.err).not.toMatch(/s3cret-pw/);
    });
  });
});
