import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { createBaseApp } from "./service.js";
import { internalClient } from "./internal-client.js";
import { listenOnSocket } from "./socket-listener.js";
import { loadSettings } from "./settings.js";
import { upstreamAddress } from "./upstream-address.js";

const dir = mkdtempSync(join(tmpdir(), "svc-sock-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const secret = "s".repeat(32);

async function service() {
  const app = createBaseApp({ log: pino({ level: "silent" }), internalSecret: secret });
  app.get("/internal/hello", async (req) => ({ hello: req.principal.id }));
  await app.ready();
  return app;
}

describe("svc.socket: a service listening on a Unix domain socket", () => {
  it("answers its health probe and signed internal calls there, in a file only its user and group may open", async () => {
    const path = join(dir, "a.sock");
    const app = await service();
    const listener = await listenOnSocket(app, path);
    expect(statSync(path).mode & 0o777).toBe(0o660);
    const client = internalClient({ baseUrl: `unix:${path}`, service: "test service", internalSecret: secret, tenant: "acme", caller: "walker" });
    expect((await client.get<{ hello: string }>("/internal/hello")).body).toEqual({ hello: "walker" });
    expect((await client.get<{ status: string }>("/health/live")).body).toEqual({ status: "up" });
    await client.close();
    await listener.close();
    await app.close();
    expect(existsSync(path)).toBe(false);
  });

  it("refuses a socket another process listens on, and removes the file it leaves when it crashes", async () => {
    const path = join(dir, "b.sock");
    const other = spawn(process.execPath, ["-e", `require("node:net").createServer().listen(${JSON.stringify(path)}, () => console.log("up"))`], { stdio: ["ignore", "pipe", "inherit"] });
    await new Promise((r) => other.stdout.once("data", r));
    const app = await service();
    await expect(listenOnSocket(app, path)).rejects.toThrow(/svc\.socket .*b\.sock is in use: another process listens on it/);
    // A crash: the process is gone, its socket file stays.
    other.kill("SIGKILL");
    await new Promise((r) => other.once("exit", r));
    expect(statSync(path).isSocket()).toBe(true);
    const listener = await listenOnSocket(app, path);
    const client = internalClient({ baseUrl: `unix:${path}`, service: "test service", internalSecret: secret, tenant: "acme", caller: "walker" });
    expect((await client.get<{ status: string }>("/health/live")).status).toBe(200);
    await client.close();
    await listener.close();
    await app.close();
  });

  it("leaves a file that is not a socket alone", async () => {
    const path = join(dir, "c.sock");
    writeFileSync(path, "data");
    const app = await service();
    await expect(listenOnSocket(app, path)).rejects.toThrow(/exists and is not a socket/);
    expect(existsSync(path)).toBe(true);
    await app.close();
  });
});

describe("service URLs over a socket", () => {
  const load = (env: Record<string, string>) => loadSettings({ env, argv: [], readFile: () => { throw Object.assign(new Error("nope"), { code: "ENOENT" }); } });

  it("takes unix:/absolute/path as an upstream's URL, and an absolute svc.socket", () => {
    const s = load({ SVC_ARTIFACTS_URL: "unix:/run/svc/artifacts.sock", SVC_AUTH_URL: "unix:///run/svc/auth.sock", SVC_SOCKET: "/run/svc/artifacts.sock" });
    expect(upstreamAddress(s.artifactsUrl)).toMatchObject({ origin: "http://localhost", socketPath: "/run/svc/artifacts.sock" });
    expect(upstreamAddress(s.authUrl).socketPath).toBe("/run/svc/auth.sock");
    expect(s.socket).toBe("/run/svc/artifacts.sock");
    expect(upstreamAddress("http://10.0.0.5:8082/")).toEqual({ origin: "http://10.0.0.5:8082", host: "10.0.0.5:8082", hostname: "10.0.0.5", port: 8082, key: "http://10.0.0.5:8082" });
  });

  it("refuses a relative socket path, another scheme, and a socket path too long for the system", () => {
    expect(() => load({ SVC_ARTIFACTS_URL: "unix:artifacts.sock" })).toThrow(/svc\.artifacts\.url.*absolute socket path/s);
    expect(() => load({ SVC_ADMIN_URL: "ftp://x" })).toThrow(/svc\.admin\.url.*must be a http or https URL, or unix:\/absolute\/path\.sock/s);
    expect(() => load({ SVC_SOCKET: "run/a.sock" })).toThrow(/svc\.socket.*absolute path/s);
    expect(() => load({ SVC_SOCKET: `/${"x".repeat(120)}` })).toThrow(/svc\.socket.*at most 103 bytes/s);
  });
});
