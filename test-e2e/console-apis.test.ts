// What the console's Credentials and Repositories pages read that the API did not answer before:
// keys expiring soon (a flag on each listed key, and a filter), and a repository's files one page
// at a time with a path-prefix filter. Everything through the gateway.
import { createHash } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSuite, type Suite } from "./suite.js";

type Credential = { id: string; label: string | null; expires: string | null; state: string; expiringSoon: boolean };
type File = { path: string; size: number; sha256: string; updated: string; lastDownloaded: string | null; downloads: number; held: string | null };

let s: Suite;
beforeAll(async () => {
  s = await startSuite();
});
afterAll(() => s?.stop());

const sha256 = (b: string) => createHash("sha256").update(b).digest("hex");
const getJson = async <T>(path: string) => {
  const res = await s.call("GET", path, { key: s.bootstrapKey });
  return { res, body: res.status === 200 ? ((await res.json()) as T) : (undefined as T), status: res.status };
};

/** Rows written straight into a service's tables: 10,000 of anything through the API would take minutes. */
async function sql(text: string, values: unknown[] = []): Promise<void> {
  const db = new pg.Client({ connectionString: s.databaseUrl });
  await db.connect();
  try {
    await db.query(text, values);
  } finally {
    await db.end();
  }
}

describe("GET /api/credentials: keys expiring soon", () => {
  it("marks active keys expiring within 14 days, and filters by ?expiring=<duration>", async () => {
    const soon = await s.mint({ label: "soon", expires: "P3D" });
    const later = await s.mint({ label: "later", expires: "P30D" });
    const revoked = await s.mint({ label: "revoked-soon", expires: "P2D" });
    expect((await s.call("DELETE", `/api/credentials/${revoked.id}`, { key: s.bootstrapKey })).status).toBe(204);

    const all = (await getJson<Credential[]>("/api/credentials")).body;
    const byId = new Map(all.map((c) => [c.id, c]));
    expect(byId.get(soon.id)!.expiringSoon).toBe(true);
    expect(byId.get(later.id)!.expiringSoon).toBe(false);
    expect(byId.get(revoked.id)!.expiringSoon).toBe(false);
    // The bootstrap key never expires.
    expect(all.filter((c) => c.expires === null).every((c) => !c.expiringSoon)).toBe(true);

    const within14 = (await getJson<Credential[]>("/api/credentials?expiring=P14D")).body.map((c) => c.id);
    expect(within14).toEqual([soon.id]);
    const within60 = (await getJson<Credential[]>("/api/credentials?expiring=P60D")).body.map((c) => c.id);
    expect(within60.sort()).toEqual([soon.id, later.id].sort());
  });

  it("refuses an expiring window that is not a positive ISO-8601 duration, naming the field", async () => {
    for (const bad of ["14", "soon", "P0D", "-P1D"]) {
      const res = await s.call("GET", `/api/credentials?expiring=${bad}`, { key: s.bootstrapKey });
      expect(res.status, bad).toBe(400);
      expect(((await res.json()) as { field: string }).field).toBe("expiring");
    }
  });

  it("pages the filtered listing among 10,000 keys", async () => {
    await sql(
      `insert into auth.credentials (id, tenant, label, expires_at)
       select encode(sha256(('bulk-' || i)::bytea), 'hex'), 'default', 'bulk ' || i,
              now() + case when i % 100 = 0 then interval '5 days' else interval '80 days' end
         from generate_series(1, 10000) as i`,
    );
    const first = await getJson<Credential[]>("/api/credentials?limit=50");
    expect(first.body).toHaveLength(50);
    expect(first.res.headers.get("x-next-cursor")).toBe(first.body[49]!.id);

    const seen: Credential[] = [];
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<typeof getJson<Credential[]>>> = await getJson<Credential[]>(`/api/credentials?expiring=P14D&limit=40${cursor ? `&after=${cursor}` : ""}`);
      expect(page.status).toBe(200);
      seen.push(...page.body);
      cursor = page.res.headers.get("x-next-cursor");
    } while (cursor);
    const bulk = seen.filter((c) => c.label?.startsWith("bulk "));
    expect(bulk).toHaveLength(100);
    expect(seen.every((c) => c.expiringSoon && c.state === "active")).toBe(true);
    expect(new Set(seen.map((c) => c.id)).size).toBe(seen.length);
  });
});

describe("GET /api/repositories/<name>/files", () => {
  it("lists files with path, size, digest and last modified, narrowed by a path prefix", async () => {
    const put = async (path: string, body: string) => expect((await s.call("PUT", `/repository/default/${path}`, { key: s.bootstrapKey, body })).status).toBe(201);
    await put("browse/app/1.0/app.jar", "one");
    await put("browse/app/2.0/app.jar", "two!");
    await put("browse/lib/x.txt", "x");
    await put("browsed-not/y.txt", "y");

    const { body } = await getJson<File[]>("/api/repositories/default/files?prefix=browse/app/");
    expect(body.map((f) => f.path)).toEqual(["browse/app/1.0/app.jar", "browse/app/2.0/app.jar"]);
    expect(body[1]).toMatchObject({ size: 4, sha256: sha256("two!"), downloads: 0, held: null });
    expect(Date.parse(body[1]!.updated)).toBeGreaterThan(Date.now() - 3_600_000);

    // A leading slash is the same prefix; a prefix is a string prefix, so "browse" also finds "browsed-not/".
    expect((await getJson<File[]>("/api/repositories/default/files?prefix=/browse/app/")).body).toHaveLength(2);
    expect((await getJson<File[]>("/api/repositories/default/files?prefix=browse")).body.map((f) => f.path)).toContain("browsed-not/y.txt");
    // LIKE's wildcards in a prefix are plain characters.
    expect((await getJson<File[]>("/api/repositories/default/files?prefix=b_owse")).body).toEqual([]);
    expect((await getJson<File[]>("/api/repositories/default/files?prefix=%25")).body).toEqual([]);
  });

  it("pages through 10,000 files with a cursor, and answers 404 for an unknown repository", async () => {
    await sql(
      `insert into artifacts.artifacts (repository, path, size, sha256)
       select 'default', 'bulk/' || lpad(i::text, 5, '0') || '.bin', i, repeat('0', 64) from generate_series(1, 10000) as i`,
    );
    const first = await getJson<File[]>("/api/repositories/default/files?prefix=bulk/&limit=100");
    expect(first.body).toHaveLength(100);
    expect(first.body[0]!.path).toBe("bulk/00001.bin");
    const cursor = first.res.headers.get("x-next-cursor");
    expect(cursor).toBe("bulk/00100.bin");
    const second = await getJson<File[]>(`/api/repositories/default/files?prefix=bulk/&limit=100&after=${encodeURIComponent(cursor!)}`);
    expect(second.body[0]!.path).toBe("bulk/00101.bin");
    const last = await getJson<File[]>("/api/repositories/default/files?prefix=bulk/&limit=100&after=bulk/09950.bin");
    expect(last.body).toHaveLength(50);
    expect(last.res.headers.get("x-next-cursor")).toBeNull();

    expect((await getJson("/api/repositories/nope/files")).status).toBe(404);
    expect((await getJson("/api/repositories/default/files?limit=0")).status).toBe(400);
  });

  it("needs manage:read like the rest of /api/", async () => {
    const reader = await s.mint({ grants: [{ scope: "*", tokens: ["repository:read"] }] });
    expect((await s.call("GET", "/api/repositories/default/files", { key: reader.key })).status).toBe(403);
  });
});

describe("GET /api/groups/<name>", () => {
  it("answers one group with its grants and member count (the head of a group's console page), 404 for none", async () => {
    const admin = { key: s.bootstrapKey };
    expect((await s.call("POST", "/api/groups/site%20ops/members", { ...admin, body: { id: "oidc/one" } })).status).toBe(201);
    expect((await s.call("POST", "/api/groups/site%20ops/members", { ...admin, body: { id: "oidc/two" } })).status).toBe(201);
    expect((await s.call("POST", "/api/groups/site%20ops/grants", { ...admin, body: { scope: "*", tokens: ["manage:read"] } })).status).toBe(200);
    const { body, status } = await getJson<{ name: string; grants: { scope: string; tokens: string[] }[]; members: number }>("/api/groups/site%20ops");
    expect(status).toBe(200);
    expect(body).toMatchObject({ name: "site ops", members: 2, grants: [{ scope: "*", tokens: ["manage:read"] }] });
    expect((await getJson("/api/groups/nobody-here")).status).toBe(404);
  });
});
