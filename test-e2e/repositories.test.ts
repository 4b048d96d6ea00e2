import { createHash, randomBytes } from "node:crypto";
import { statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { freshName as fresh, startSuite, type Suite } from "./suite.js";
import { collectArtifactEvents } from "./upstream.js";


describe("repositories with a format", () => {
  let s: Suite;
  let admin: string;
  let deployer: string;
  beforeAll(async () => {
    s = await startSuite();
    admin = s.bootstrapKey;
    deployer = (await s.mint({ label: "ci", grants: [{ scope: "*", tokens: ["deploy"] }] })).key;
  });
  afterAll(async () => {
    await s?.stop();
  });

  it("creates a repository with a name and a format, and shows its format, counts, bytes and creation time", async () => {
    const name = fresh("npm");
    const created = await s.call("POST", "/api/repositories", { key: admin, body: { name, format: "npm" } });
    expect(created.status).toBe(201);
    expect(created.headers.get("location")).toBe(`/api/repositories/${name}`);
    const body = (await created.json()) as Record<string, unknown>;
    expect(body).toEqual({ name, format: "npm", created: expect.any(String), artifacts: 0, bytes: 0 });
    expect(Date.now() - Date.parse(body.created as string)).toBeLessThan(600_000);

    const raw = fresh("raw");
    await s.createRepository(raw, "raw");
    expect((await s.call("PUT", `/repository/${raw}/a/one.txt`, { key: deployer, body: "12345" })).status).toBe(201);
    expect((await s.call("PUT", `/repository/${raw}/b/two.txt`, { key: deployer, body: "678" })).status).toBe(201);
    const shown = await s.call("GET", `/api/repositories/${raw}`, { key: admin });
    expect(shown.status).toBe(200);
    expect(await shown.json()).toMatchObject({ name: raw, format: "raw", artifacts: 2, bytes: 8 });

    const list = await s.call("GET", "/api/repositories?limit=500", { key: admin });
    const names = ((await list.json()) as { name: string; format: string }[]).map((r) => `${r.name}:${r.format}`);
    expect(names).toEqual(expect.arrayContaining([`${name}:npm`, `${raw}:raw`, "default:raw"]));
  });

  it("refuses a bad name, an unknown format, an unknown field and a name taken, in the API's error shape", async () => {
    const bad = async (body: object, status: number, detail: RegExp) => {
      const r = await s.call("POST", "/api/repositories", { key: admin, body });
      expect(r.status).toBe(status);
      expect(r.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(((await r.json()) as { detail: string }).detail).toMatch(detail);
    };
    await bad({ name: "../etc", format: "raw" }, 400, /repository name/);
    await bad({ name: fresh("x"), format: "docker" }, 400, /format/);
    await bad({ name: fresh("x"), format: "raw", retention: {} }, 400, /unknown field "retention"/);
    await bad({ format: "raw" }, 400, /"name"/);
    await bad({ name: "default", format: "npm" }, 409, /exists already/);
    expect((await s.call("GET", `/api/repositories/${fresh("none")}`, { key: admin })).status).toBe(404);
    // Administration: a deploy key may publish but not create repositories.
    expect((await s.call("POST", "/api/repositories", { key: deployer, body: { name: fresh("x"), format: "raw" } })).status).toBe(403);
    expect((await s.call("GET", "/api/repositories?limit=0", { key: admin })).status).toBe(400);
  });

  it("stores the same content once, whichever repositories hold it, and keeps it while one still does", async () => {
    const a = fresh("a");
    const b = fresh("b");
    for (const name of [a, b]) await s.createRepository(name, "raw");
    const content = `shared ${randomBytes(8).toString("hex")}`;
    expect((await s.call("PUT", `/repository/${a}/x/lib.jar`, { key: deployer, body: content })).status).toBe(201);
    expect((await s.call("PUT", `/repository/${b}/y/copy.jar`, { key: deployer, body: content })).status).toBe(201);
    const inA = statSync(join(s.storeRoot, "repositories", a, "x", "lib.jar"));
    const inB = statSync(join(s.storeRoot, "repositories", b, "y", "copy.jar"));
    expect(inB.ino).toBe(inA.ino);
    expect(inB.nlink).toBe(3); // both paths and the blob
    expect((await s.call("DELETE", `/repository/${a}/x/lib.jar`, { key: deployer })).status).toBe(204);
    expect(await (await s.call("GET", `/repository/${b}/y/copy.jar`, { key: deployer })).text()).toBe(content);
    expect(statSync(join(s.storeRoot, "repositories", b, "y", "copy.jar")).nlink).toBe(2);
    // The last holder gone, so is the copy.
    const sha = createHash("sha256").update(content).digest("hex");
    const blob = join(s.storeRoot, "blobs", "sha256", sha.slice(0, 2), sha);
    expect(statSync(blob).ino).toBe(inA.ino);
    expect((await s.call("DELETE", `/repository/${b}/y/copy.jar`, { key: deployer })).status).toBe(204);
    expect(statSync(blob, { throwIfNoEntry: false })).toBeUndefined();
  });

  it("refuses to remove a repository that holds artifacts unless forced, and then removes each with its event", async () => {
    const name = fresh("gone");
    await s.createRepository(name, "raw");
    const events = await collectArtifactEvents(inject("natsUrl"), s.tenant, (e) => e.repository === name);
    try {
      for (const p of ["p/1.txt", "p/2.txt"]) expect((await s.call("PUT", `/repository/${name}/${p}`, { key: deployer, body: p })).status).toBe(201);
      const refused = await s.call("DELETE", `/api/repositories/${name}`, { key: admin });
      expect(refused.status).toBe(409);
      expect(((await refused.json()) as { detail: string }).detail).toMatch(/holds 2 artifact\(s\).*force=true/);
      expect((await s.call("GET", `/repository/${name}/p/1.txt`, { key: deployer })).status).toBe(200);

      expect((await s.call("DELETE", `/api/repositories/${name}?force=true`, { key: admin })).status).toBe(204);
      expect((await s.call("GET", `/api/repositories/${name}`, { key: admin })).status).toBe(404);
      expect((await s.call("GET", `/repository/${name}/p/1.txt`, { key: deployer })).status).toBe(404);
      const got = await events.until("both removals", (es) => es.filter((e) => e.kind === "artifact.removed").length === 2);
      expect(got.filter((e) => e.kind === "artifact.removed").map((e) => e.path).sort()).toEqual(["p/1.txt", "p/2.txt"]);
    } finally {
      await events.close();
    }
    const empty = fresh("empty");
    await s.createRepository(empty, "npm");
    expect((await s.call("DELETE", `/api/repositories/${empty}`, { key: admin })).status).toBe(204);
  });
});
