import { createHash, randomBytes } from "node:crypto";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshName as fresh, startSuite, type Suite } from "./suite.js";
import { collectArtifactEvents, eventually } from "./upstream.js";


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
    // A hosted repository (issue 25 adds proxies and groups: `type`, `upstream` and `members` are shown for every repository).
    expect(body).toEqual({ name, format: "npm", created: expect.any(String), type: "hosted", upstream: null, members: null, artifacts: 0, bytes: 0, quotaBytes: null, usedBytes: 0, scopeFromPath: false });
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
    // One blob holds the content of both paths (the path index names it for each).
    const sha = createHash("sha256").update(content).digest("hex");
    const blob = join(s.storeRoot, "blobs", "sha256", sha.slice(0, 2), sha);
    expect(statSync(blob).size).toBe(content.length);
    const shaOf = async (repo: string) => ((await (await s.call("GET", `/api/repositories/${repo}/files`, { key: admin })).json()) as { sha256: string }[]).map((f) => f.sha256);
    expect([...(await shaOf(a)), ...(await shaOf(b))]).toEqual([sha, sha]);
    expect((await s.call("DELETE", `/repository/${a}/x/lib.jar`, { key: deployer })).status).toBe(204);
    expect(await (await s.call("GET", `/repository/${b}/y/copy.jar`, { key: deployer })).text()).toBe(content);
    expect(statSync(blob).size).toBe(content.length);
    // The last holder gone, so is the copy.
    expect((await s.call("DELETE", `/repository/${b}/y/copy.jar`, { key: deployer })).status).toBe(204);
    expect(statSync(blob, { throwIfNoEntry: false })).toBeUndefined();
  });

  it("refuses to remove a repository that holds artifacts unless forced, and then removes each with its event", async () => {
    const name = fresh("gone");
    await s.createRepository(name, "raw");
    const events = await collectArtifactEvents(s.natsUrl, s.tenant, (e) => e.repository === name);
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

  const blobOf = (content: string) => {
    const sha = createHash("sha256").update(content).digest("hex");
    return join(s.storeRoot, "blobs", "sha256", sha.slice(0, 2), sha);
  };

  it("a forced removal under a stream of uploads closes the repository to them at once: each lands before it or answers 404, never a 500, and nothing is left behind", async () => {
    for (let round = 0; round < 3; round++) {
      const name = fresh("racing");
      expect((await s.call("POST", "/api/repositories", { key: admin, body: { name, format: "raw" } })).status).toBe(201);
      const events = await collectArtifactEvents(s.natsUrl, s.tenant, (e) => e.repository === name && e.kind === "artifact.removed");
      try {
        const answers: { status: number; path: string; content: string; detail?: string }[] = [];
        // Each uploader publishes new content until the repository is gone for it (a removal that
        // kept chasing new uploads instead of closing the repository would run them out).
        const uploader = async (w: number): Promise<number> => {
          let status = 0;
          for (let i = 0; i < 150 && (status === 0 || status === 200 || status === 201); i++) {
            const path = `w${w}/${i}.bin`;
            const content = `${name} ${path} ${randomBytes(16).toString("hex")}`;
            const res = await s.call("PUT", `/repository/${name}/${path}`, { key: deployer, body: content });
            status = res.status;
            const text = await res.text();
            answers.push({ status, path, content, ...(status >= 300 ? { detail: text } : {}) });
          }
          return status;
        };
        const uploads = Array.from({ length: 12 }, (_, w) => uploader(w));
        await eventually("uploads landing", async () => (answers.filter((a) => a.status === 201).length >= 30 ? true : undefined));
        const removal = await s.call("DELETE", `/api/repositories/${name}?force=true`, { key: admin });
        const lastAnswers = await Promise.all(uploads);

        expect(removal.status).toBe(204);
        const unexpected = answers.filter((a) => ![200, 201, 404].includes(a.status));
        expect(unexpected, JSON.stringify(unexpected.slice(0, 3))).toEqual([]);
        expect(lastAnswers).toEqual(lastAnswers.map(() => 404));
        for (const a of answers.filter((x) => x.status === 404)) expect(a.detail).toMatch(/no repository/);
        expect((await s.call("GET", `/api/repositories/${name}`, { key: admin })).status).toBe(404);
        expect(existsSync(join(s.storeRoot, "repositories", name))).toBe(false);
        // Every upload that landed was removed with its event; no content of any upload is left as a blob.
        const landed = answers.filter((a) => a.status === 201).map((a) => a.path);
        const removed = await events.until("a removal event for each upload that landed", (es) => landed.every((p) => es.some((e) => e.path === p)));
        expect(removed.length).toBe(landed.length);
        expect(answers.filter((a) => existsSync(blobOf(a.content))).map((a) => a.path)).toEqual([]);
      } finally {
        await events.close();
      }
    }
  }, 180_000);

  it("an upload still arriving when its repository is force-removed answers 404, writes nothing into the removed folder and leaves no blob", async () => {
    const name = fresh("arriving");
    expect((await s.call("POST", "/api/repositories", { key: admin, body: { name, format: "raw" } })).status).toBe(201);
    expect((await s.call("PUT", `/repository/${name}/held.txt`, { key: deployer, body: `held ${name}` })).status).toBe(201);
    const tmp = join(s.storeRoot, "tmp");
    const staging = () => readdirSync(tmp).length;
    const before = staging();
    let release = () => {};
    const released = new Promise<void>((r) => (release = r));
    const contents = Array.from({ length: 4 }, (_, i) => `${name} upload ${i} ${randomBytes(16).toString("hex")}`);
    const uploads = contents.map((content, i) => {
      const body = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(new TextEncoder().encode(content.slice(0, 10)));
          await released;
          controller.enqueue(new TextEncoder().encode(content.slice(10)));
          controller.close();
        },
      });
      return s.call("PUT", `/repository/${name}/late/${i}.bin`, { key: deployer, body });
    });
    try {
      // Every upload is being written to tmp/ when the removal comes.
      await eventually("the uploads being staged", async () => (staging() >= before + contents.length ? true : undefined));
      expect((await s.call("DELETE", `/api/repositories/${name}?force=true`, { key: admin })).status).toBe(204);
    } finally {
      release();
    }
    for (const res of await Promise.all(uploads)) {
      expect(res.status).toBe(404);
      expect(await res.text()).toMatch(/no repository/);
    }
    expect(existsSync(join(s.storeRoot, "repositories", name))).toBe(false);
    expect(contents.filter((c) => existsSync(blobOf(c)))).toEqual([]);
    expect(existsSync(blobOf(`held ${name}`))).toBe(false);
    await eventually("the staged uploads dropped", async () => (staging() <= before ? true : undefined));
  });
});
