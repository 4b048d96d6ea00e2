import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { repositoryScopesFactory } from "./repository-scopes.js";

/** An artifacts service stand-in on port 0 answering GET /internal/scope-from-path with `list()`, each answer held until `release()` when `hold` is set. */
async function origin(list: () => string[]) {
  const held: (() => void)[] = [];
  let hold = false;
  const server: Server = createServer((req, res) => {
    const answer = () => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ repositories: list() }));
    if (req.url !== "/internal/scope-from-path") return res.writeHead(404).end();
    if (hold) held.push(answer);
    else answer();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    holdAnswers: () => (hold = true),
    waiting: () => held.length,
    release: () => held.splice(0).forEach((a) => a()),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

describe("the repositories authorised by their path, on a gateway", () => {
  it("are loaded from the artifacts service, and a change heard applies at once", async () => {
    let stored = ["team-npm"];
    const o = await origin(() => stored);
    const scopes = repositoryScopesFactory({ artifactsUrl: o.url, internalSecret: "s".repeat(32), tenant: "default", log: { warn: () => {} } });
    closers.push(scopes.close, o.close);
    expect(scopes.fromPath("team-npm")).toBe(false);
    await scopes.refresh();
    expect(scopes.fromPath("team-npm")).toBe(true);
    expect(scopes.fromPath("other")).toBe(false);
    scopes.heard({ repository: "other", scopeFromPath: true });
    scopes.heard({ repository: "team-npm", scopeFromPath: false });
    scopes.heard({ repository: 7, scopeFromPath: "yes" });
    expect([scopes.fromPath("team-npm"), scopes.fromPath("other")]).toEqual([false, true]);
    stored = ["other"];
    await scopes.refresh();
    expect([scopes.fromPath("team-npm"), scopes.fromPath("other")]).toEqual([false, true]);
  });

  it("a load begun before a change was heard never undoes it", async () => {
    const o = await origin(() => []);
    const scopes = repositoryScopesFactory({ artifactsUrl: o.url, internalSecret: "s".repeat(32), tenant: "default", log: { warn: () => {} } });
    closers.push(scopes.close, o.close);
    o.holdAnswers();
    const slow = scopes.refresh();
    while (o.waiting() === 0) await new Promise((r) => setTimeout(r, 10)); // the request has reached the origin
    scopes.heard({ repository: "team-py", scopeFromPath: true });
    o.release();
    await slow;
    expect(scopes.fromPath("team-py")).toBe(true);
  });
});
