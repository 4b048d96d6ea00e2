import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSuite, type Suite } from "./suite.js";
import { eventually } from "./upstream.js";

const DAY = 86_400_000;
const PROXY = "mvn-times";
const METADATA = "com/acme/lib/maven-metadata.xml";

/**
 * The cooldown's publish times of a Maven proxy repository (the Last-Modified of each version's
 * .pom at the upstream) are kept in Postgres: after the artifacts service restarts, it gives the
 * same answer without asking the upstream again, even when the upstream now says otherwise.
 * The upstream is a small server of the Maven 2 layout on 127.0.0.1 that counts the .pom requests.
 */
describe("a Maven proxy's publish times", () => {
  let s: Suite;
  let upstream: Server;
  let admin: string;
  const poms: string[] = [];
  /** The Last-Modified the upstream gives each version's .pom. */
  const lastModified = new Map<string, number>();

  const get = (path: string) => s.call("GET", `/repository/${PROXY}/${path}`, { key: admin });
  const listed = async () => {
    const r = await get(METADATA);
    expect(r.status).toBe(200);
    return [...(await r.text()).matchAll(/<version>([^<]+)<\/version>/g)].map((m) => m[1]);
  };

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      const path = (req.url ?? "").replace(/^\/maven2\//, "");
      const pom = /^com\/acme\/lib\/([^/]+)\/lib-[^/]+\.pom$/.exec(path);
      if (pom) {
        poms.push(path);
        return res.writeHead(200, { "last-modified": new Date(lastModified.get(pom[1]!)!).toUTCString() }).end("<project/>");
      }
      if (path === METADATA) return res.writeHead(200).end("<metadata><groupId>com.acme</groupId><artifactId>lib</artifactId><versioning><latest>2.0</latest><release>2.0</release><versions><version>1.0</version><version>2.0</version></versions></versioning></metadata>");
      if (path === "com/acme/lib/1.0/lib-1.0.jar") return res.writeHead(200).end("jar 1.0");
      if (path === "com/acme/lib/1.0/lib-1.0.jar.sha1") return res.writeHead(200).end(createHash("sha1").update("jar 1.0").digest("hex"));
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
    lastModified.set("1.0", Date.now() - 30 * DAY);
    lastModified.set("2.0", Date.now() - 60_000);
    s = await startSuite({ env: { SVC_REPOSITORY: "maven-local", SVC_REPOSITORY_FORMAT: "maven", SVC_BLOCK_PRIVATE_IMPORT_HOSTS: "false", SVC_GATE_MIN_AGE: "7d", SVC_PROXY_METADATA_TTL: "1s" } });
    admin = s.bootstrapKey;
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/maven2`;
    await eventually(`proxy repository ${PROXY} created`, async () => {
      const r = await s.call("POST", "/api/repositories", { key: admin, body: { name: PROXY, format: "maven", type: "proxy", upstream: { url } } });
      return r.status === 201 ? r : undefined;
    });
  }, 900_000);
  afterAll(async () => {
    await s?.stop();
    await new Promise<void>((r) => (upstream ? upstream.close(() => r()) : r()));
  });

  it("a young version is hidden and its files refused; each version's .pom is asked once", async () => {
    expect(await listed()).toEqual(["1.0"]);
    expect(poms.sort()).toEqual(["com/acme/lib/1.0/lib-1.0.pom", "com/acme/lib/2.0/lib-2.0.pom"]);
    const young = await get("com/acme/lib/2.0/lib-2.0.jar");
    expect(young.status).toBe(404);
    expect(await young.text()).toContain("younger than the minimum age of 7d");
    expect(await listed()).toEqual(["1.0"]);
    expect(poms).toHaveLength(2);
  });

  it("through a group, a young version's file is refused with the cooldown's reason (not passed over as missing) and logged; an old one is served", async () => {
    const made = await s.call("POST", "/api/repositories", { key: admin, body: { name: "mvn-all", format: "maven", type: "group", members: ["maven-local", PROXY] } });
    expect(made.status).toBe(201);
    const { id, key: reader } = await s.mint({ label: "group-reader", grants: [{ scope: "*", tokens: ["read-only"] }] });
    const through = (path: string) => s.call("GET", `/repository/mvn-all/${path}`, { key: reader });
    const young = await eventually("the group served", async () => {
      const r = await through("com/acme/lib/2.0/lib-2.0.jar");
      return r.status === 404 && (await r.clone().text()).includes("younger") ? r : undefined;
    });
    expect(await young.text()).toContain("younger than the minimum age of 7d");
    // In the refusal log as the proxy member's refusal, naming the reader who asked through the group.
    const refusals = (await (await s.call("GET", `/api/refusals?repository=${PROXY}`, { key: admin })).json()) as { path: string; version: string; principal: string; reason: string }[];
    const readers = refusals.filter((r) => r.principal.endsWith(id));
    expect(readers).toHaveLength(1);
    expect(readers[0]).toMatchObject({ path: "com/acme/lib/2.0/lib-2.0.jar", version: "2.0" });
    expect(readers[0]!.reason).toContain("younger than the minimum age of 7d");
    const old = await through("com/acme/lib/1.0/lib-1.0.jar");
    expect(old.status).toBe(200);
    expect(await old.text()).toBe("jar 1.0");
  });

  it("after a restart the same versions are listed and refused without asking the upstream again, though it now gives other times", async () => {
    // The upstream now says 1.0 is new and 2.0 is old: a node that asked again would list 2.0 and hide 1.0.
    lastModified.set("1.0", Date.now());
    lastModified.set("2.0", Date.now() - 30 * DAY);
    poms.length = 0;
    await s.stopService("artifacts");
    await s.startService("artifacts");
    await eventually("the proxy answering after the restart", async () => ((await get(METADATA).catch(() => undefined))?.status === 200 ? true : undefined), 60_000);

    expect(await listed()).toEqual(["1.0"]);
    expect((await get("com/acme/lib/2.0/lib-2.0.jar")).status).toBe(404);
    const old = await get("com/acme/lib/1.0/lib-1.0.jar");
    expect(old.status).toBe(200);
    expect(await old.text()).toBe("jar 1.0");
    expect(poms).toEqual([]);
  });
});
