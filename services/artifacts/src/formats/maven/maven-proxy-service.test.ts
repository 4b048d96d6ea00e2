import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Readable } from "node:stream";
import pino from "pino";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { digestCheck } from "../../domain/upload-checks.js";
import { upstreamsFactory } from "../../proxy/file-fetch.js";
import type { TooYoung } from "../format.js";
import { mavenProxyFactory, type MavenProxyDeps } from "./maven-proxy-service.js";
import { parseArtifactMetadata } from "./maven-proxy.js";
import { parseMavenPath } from "./maven-layout.js";

const DAY = 86_400_000;
const now = Date.parse("2026-06-01T00:00:00Z");
const sha1 = (s: string) => createHash("sha1").update(s).digest("hex");

/** An upstream in the Maven 2 layout on 127.0.0.1: what it holds, with a Last-Modified per POM; what it was asked. */
const files = new Map<string, { body: string; lastModified?: number }>();
const asked: string[] = [];
let server: Server;
let url: string;
beforeAll(async () => {
  server = createServer((req, res) => {
    asked.push(req.url ?? "");
    const f = files.get(req.url ?? "");
    if (!f) return res.writeHead(404).end();
    res.writeHead(200, f.lastModified ? { "last-modified": new Date(f.lastModified).toUTCString() } : {}).end(f.body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/maven2`;
  const put = (path: string, body: string, lastModified?: number) => files.set(`/maven2/${path}`, { body, ...(lastModified ? { lastModified } : {}) });
  put("com/acme/lib/maven-metadata.xml", "<metadata><versioning><latest>2.0</latest><release>2.0</release><versions><version>1.0</version><version>1.1</version><version>2.0</version></versions></versioning></metadata>");
  put("com/acme/lib/1.0/lib-1.0.pom", "<project/>", now - 30 * DAY);
  put("com/acme/lib/1.1/lib-1.1.pom", "<project/>", now - 20 * DAY);
  put("com/acme/lib/2.0/lib-2.0.pom", "<project/>", now - 1000);
  put("com/acme/lib/1.0/lib-1.0.jar", "jar 1.0");
  put("com/acme/lib/1.0/lib-1.0.jar.sha1", `${sha1("jar 1.0")}  lib-1.0.jar\n`);
  put("com/acme/lib/1.1/lib-1.1.jar", "jar 1.1");
  put("com/acme/lib/1.1/lib-1.1.jar.sha1", sha1("not jar 1.1"));
  put("com/acme/lib/2.0/lib-2.0.jar", "jar 2.0");
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

/** A minimum age of a week over the publish times it is given (unknown: too young), recording what it was asked. */
function weekCooldown(calls: Map<string, Date | undefined>[]): TooYoung {
  return async (_repository, _name, published) => {
    calls.push(new Map(published));
    return new Map([...published].flatMap(([v, at]) => (at === undefined || now - at.getTime() < 7 * DAY ? [[v, at ? "published less than 7 days ago" : "publish time unknown"]] : [])));
  };
}

/** The publish times kept (the maven_publish_times table's contract: the first time kept stays), shared by every proxy given it. */
function keptTimes(rows = new Map<string, Date>()): Pick<MavenProxyDeps["store"], "publishTimes" | "rememberPublishTime"> & { rows: Map<string, Date> } {
  const key = (k: { repository: string; groupId: string; artifactId: string }, v: string) => `${k.repository} ${k.groupId}:${k.artifactId}:${v}`;
  return {
    rows,
    publishTimes: async (k, versions) => new Map(versions.flatMap((v) => (rows.has(key(k, v)) ? [[v, rows.get(key(k, v))!] as const] : []))),
    rememberPublishTime: async (k, v, at) => {
      if (!rows.has(key(k, v))) rows.set(key(k, v), at);
      return rows.get(key(k, v))!;
    },
  };
}

/** The Maven proxy over the upstream above; files "stored" through a deploy stand-in that checks declared digests as the artifact service does. */
function proxyWith(extra: Partial<MavenProxyDeps> = {}) {
  const stored = new Map<string, string>();
  const deployed: string[] = [];
  const publish = async (a: { path: string }, source: Readable, _type: string | null, _actor: unknown, checks?: { digests?: Parameters<typeof digestCheck>[0] }) => {
    const digests = digestCheck(checks?.digests ?? {});
    const sha256 = createHash("sha256");
    const chunks: Buffer[] = [];
    for await (const chunk of digests.through.reduce<Readable>((from, t) => from.pipe(t), source)) {
      sha256.update(chunk as Buffer);
      chunks.push(chunk as Buffer);
    }
    digests.verify(sha256.digest("hex"));
    stored.set(a.path, Buffer.concat(chunks).toString());
    return { size: 0, sha256: "", created: true, etag: undefined };
  };
  const pool = { connect: async () => ({ query: async () => ({ rows: [{ got: true }] }), release: () => {} }) } as unknown as pg.Pool;
  const upstreams = upstreamsFactory({
    pool,
    metadata: { find: async (_r: string, path: string) => (stored.has(path) ? ({ path } as never) : undefined) },
    artifacts: { publish: publish as never },
    upstreamOf: () => ({ url }),
    settings: () => ({ blockPrivate: false }),
    readOnly: false,
    log: pino({ level: "silent" }),
    actor: { kind: "system", id: "proxy" },
  });
  const proxy = mavenProxyFactory({
    upstreams,
    // The document cache's contract (proxy/proxied-documents.ts) without its table: each read asks the upstream.
    documents: {
      get: async (repository, _key, from) => {
        const a = await upstreams.get(repository, from, {}, 1 << 20);
        return a.status === 200 ? { body: a.body.toString(), fetchedAt: new Date(now), stale: false } : undefined;
      },
    },
    store: { heldVersions: async () => new Set<string>(), ...keptTimes() },
    deploy: (async (a: { path: string }, ...rest: [Readable, string | null, unknown, never]) => {
      deployed.push(a.path);
      return publish(a, ...rest);
    }) as never,
    readOnly: false,
    log: pino({ level: "silent" }),
    now: () => now,
    ...extra,
  });
  const fetchFile = (path: string) => {
    const f = parseMavenPath(path.split("/"));
    return proxy.file("p", path, f.kind === "file" ? f : undefined);
  };
  return { proxy, stored, deployed, fetchFile };
}

const versionsOf = async (proxy: ReturnType<typeof mavenProxyFactory>) => {
  const doc = await proxy.metadata("p", ["com", "acme", "lib"]);
  return doc && parseArtifactMetadata(doc.body);
};

describe("maven proxy service", () => {
  it("leaves out of maven-metadata.xml the versions held here and those the gate refuses or holds, a warning kept", async () => {
    const { proxy } = proxyWith({
      store: { heldVersions: async () => new Set(["1.0"]), ...keptTimes() },
      screenVersions: async () =>
        new Map([
          ["2.0", { action: "BLOCK" as const, reason: "malware" }],
          ["1.1", { action: "WARN" as const, reason: "a low vulnerability" }],
        ]),
    });
    expect(await versionsOf(proxy)).toEqual({ versions: ["1.1"], latest: "1.1", release: "1.1" });
    // Every version hidden: no document.
    const none = proxyWith({ screenVersions: async (_r, _n, versions) => new Map(versions.map((v) => [v, { action: "HOLD" as const, reason: "held" }])) });
    expect(await none.proxy.metadata("p", ["com", "acme", "lib"])).toBeUndefined();
  });

  it("asks the upstream for publish times (a POM's Last-Modified, once per version) only when a minimum age applies; too young is neither listed nor fetched", async () => {
    const off: Map<string, Date | undefined>[] = [];
    asked.length = 0;
    const { proxy: free } = proxyWith({ tooYoung: async (_r, _n, published) => (off.push(new Map(published)), new Map()) });
    expect((await versionsOf(free))?.versions).toEqual(["1.0", "1.1", "2.0"]);
    expect(asked.filter((p) => p.endsWith(".pom"))).toEqual([]);

    const calls: Map<string, Date | undefined>[] = [];
    const { proxy, fetchFile, stored } = proxyWith({ tooYoung: weekCooldown(calls) });
    asked.length = 0;
    expect(await versionsOf(proxy)).toEqual({ versions: ["1.0", "1.1"], latest: "1.1", release: "1.1" });
    expect(asked.filter((p) => p.endsWith(".pom")).sort()).toEqual(["/maven2/com/acme/lib/1.0/lib-1.0.pom", "/maven2/com/acme/lib/1.1/lib-1.1.pom", "/maven2/com/acme/lib/2.0/lib-2.0.pom"]);
    expect(calls[1]?.get("1.0")?.getTime()).toBe(Math.floor((now - 30 * DAY) / 1000) * 1000);
    await versionsOf(proxy);
    expect(asked.filter((p) => p.endsWith(".pom"))).toHaveLength(3);
    await expect(fetchFile("com/acme/lib/2.0/lib-2.0.jar")).rejects.toMatchObject({ code: "not_found", message: expect.stringContaining("published less than 7 days ago") });
    expect(asked.some((p) => p.includes("lib-2.0.jar"))).toBe(false);
    expect(stored.has("com/acme/lib/2.0/lib-2.0.jar")).toBe(false);
  });

  it("keeps the publish times it learns where every node reads them: another node (or a restart) asks the upstream for no .pom and agrees, even when the upstream says something else now", async () => {
    const kept = keptTimes();
    const first = proxyWith({ tooYoung: weekCooldown([]), store: { heldVersions: async () => new Set<string>(), ...kept } });
    asked.length = 0;
    expect((await versionsOf(first.proxy))?.versions).toEqual(["1.0", "1.1"]);
    expect(asked.filter((p) => p.endsWith(".pom"))).toHaveLength(3);
    expect(kept.rows.size).toBe(3);

    const pom = files.get("/maven2/com/acme/lib/1.0/lib-1.0.pom")!;
    files.set("/maven2/com/acme/lib/1.0/lib-1.0.pom", { body: pom.body, lastModified: now - 1000 });
    try {
      asked.length = 0;
      const second = proxyWith({ tooYoung: weekCooldown([]), store: { heldVersions: async () => new Set<string>(), ...kept } });
      expect((await versionsOf(second.proxy))?.versions).toEqual(["1.0", "1.1"]);
      expect(asked.filter((p) => p.endsWith(".pom"))).toEqual([]);
      // A read-only node asks nothing either, and reads the same.
      const readOnly = proxyWith({ tooYoung: weekCooldown([]), store: { heldVersions: async () => new Set<string>(), ...kept }, readOnly: true });
      expect((await versionsOf(readOnly.proxy))?.versions).toEqual(["1.0", "1.1"]);
      expect(asked.filter((p) => p.endsWith(".pom"))).toEqual([]);
    } finally {
      files.set("/maven2/com/acme/lib/1.0/lib-1.0.pom", pom);
    }
  });

  it("checks a file against the upstream's .sha1 and stores it through the deploy; a mismatch stores nothing; no .sha1 stores it unchecked", async () => {
    const { fetchFile, stored, deployed } = proxyWith();
    await fetchFile("com/acme/lib/1.0/lib-1.0.jar");
    expect(stored.get("com/acme/lib/1.0/lib-1.0.jar")).toBe("jar 1.0");
    expect(deployed).toEqual(["com/acme/lib/1.0/lib-1.0.jar"]);
    await expect(fetchFile("com/acme/lib/1.1/lib-1.1.jar")).rejects.toMatchObject({ code: "bad_gateway", message: expect.stringContaining("does not match") });
    expect(stored.has("com/acme/lib/1.1/lib-1.1.jar")).toBe(false);
    await fetchFile("com/acme/lib/2.0/lib-2.0.jar");
    expect(stored.get("com/acme/lib/2.0/lib-2.0.jar")).toBe("jar 2.0");
    await expect(fetchFile("com/acme/lib/3.0/lib-3.0.jar")).rejects.toMatchObject({ code: "not_found" });
  });
});
