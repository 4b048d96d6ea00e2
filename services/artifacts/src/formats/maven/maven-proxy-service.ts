import type { FastifyBaseLogger } from "fastify";
import { invalid, notFound } from "@svc/contracts";
import { CooldownRefusal, type ScreenVersions, type TooYoung } from "../format.js";
import { badGateway, type FileSource, type LiveFile, type Upstreams } from "../../proxy/file-fetch.js";
import type { ProxiedDocuments } from "../../proxy/proxied-documents.js";
import { staleHeaders } from "../../proxy/upstream-health.js";
import { UpstreamUnreachable, type UpstreamAnswer } from "../../proxy/upstream-client.js";
import { isSnapshot, type MavenFile } from "./maven-layout.js";
import { declaredSha1, filterArtifactMetadata, parseArtifactMetadata } from "./maven-proxy.js";
import type { MavenRepository } from "./maven-repository.js";
import type { MavenStore } from "./maven-store.js";

export interface MavenProxyDeps {
  upstreams: Upstreams;
  /** Where the upstream's maven-metadata.xml documents are kept (proxy/proxied-documents.ts). */
  documents: Pick<ProxiedDocuments, "get">;
  /** Held versions; the upstream publish times learned (kept in Postgres: every node and a restart read the same). */
  store: Pick<MavenStore, "heldVersions" | "publishTimes" | "rememberPublishTime">;
  /** How a fetched file of a version is stored: as a deploy stores it (its version rows and digests). */
  deploy: MavenRepository["deploy"];
  /** The screening gate's verdicts: BLOCK and HOLD versions are left out of maven-metadata.xml. */
  screenVersions?: ScreenVersions;
  /** The cooldown: versions too young are neither listed nor fetched. */
  tooYoung?: TooYoung;
  /** svc.read-only: no upstream is asked for a publish time (what is not known counts as too young). */
  readOnly: boolean;
  log: FastifyBaseLogger;
  now?: () => number;
}

/** A maven-metadata.xml as a proxy repository serves it. */
export interface ServedMetadata {
  body: string;
  /** Warning and Age when it is a stale copy (the upstream failing). */
  headers: Record<string, string>;
}

const joinUrl = (base: string, rest: string) => `${base.replace(/\/+$/, "")}/${rest}`;
const METADATA_KIND = {
  accept: "application/xml, text/xml;q=0.9, */*;q=0.1",
  invalid: (body: string) => (/<metadata[\s>]/.test(body) ? undefined : "the upstream answered a maven-metadata.xml that is no <metadata> document"),
};
const MAX_SHA1_BYTES = 4096;
/** Packagings whose main artifact has their own extension; every other one's is a .jar (bundle, maven-plugin, …). */
const OWN_EXTENSION = new Set(["war", "ear", "rar", "aar", "zip"]);
const MAVEN_PART = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

/** An import's Maven item: `groupId:artifactId` or `groupId:artifactId:version` (a 400 otherwise). */
export function mavenSpec(spec: string): { name: string; version?: string } {
  const parts = spec.split(":");
  if ((parts.length !== 2 && parts.length !== 3) || !parts.every((p) => MAVEN_PART.test(p) && !p.includes(".."))) {
    throw invalid("packages", `${spec} is not groupId:artifactId or groupId:artifactId:version`);
  }
  const name = `${parts[0]}:${parts[1]}`;
  return parts.length === 3 ? { name, version: parts[2]! } : { name };
}
const MAX_POM_BYTES = 4 * 1024 * 1024;
/** How many upstream publish times a process keeps in memory (a few hundred bytes each); the rest are read from Postgres. */
const PUBLISH_TIMES_KEPT = 20_000;

/**
 * The Maven side of a proxy repository (docs/integration/maven.md, "Proxy repositories"): a file
 * of the layout fetched from `<upstream>/<path>` on its first request and checked against the
 * upstream's `<path>.sha1`, stored as a deploy stores it (so its checksums and version rows are
 * the server's own, and the screening gate sees it); `maven-metadata.xml` documents kept as
 * proxied documents (TTL, revalidation, stale serving), an artifact's with the versions the gate
 * holds or refuses, and the versions too young, left out.
 */
export function mavenProxyFactory(deps: MavenProxyDeps) {
  const now = deps.now ?? Date.now;
  const urlOf = (repository: string, path: string) => joinUrl(deps.upstreams.upstream(repository).url, path);
  /**
   * Upstream publish times of versions (the Last-Modified of their .pom) this process has read,
   * by repository, artifact and version (oldest first, at most PUBLISH_TIMES_KEPT): a version's
   * time does not change once kept in Postgres, so they never go stale.
   */
  const published = new Map<string, Date>();
  const keyOf = (repository: string, groupPath: string, artifactId: string, version: string) => `${repository}\0${groupPath}\0${artifactId}\0${version}`;
  const keep = (key: string, at: Date) => {
    published.set(key, at);
    if (published.size > PUBLISH_TIMES_KEPT) published.delete(published.keys().next().value!);
  };

  /** The .pom's Last-Modified at the upstream; undefined when the upstream does not say (or does not answer). */
  const askUpstream = async (repository: string, groupPath: string, artifactId: string, version: string): Promise<Date | undefined> => {
    let answer: UpstreamAnswer;
    try {
      answer = await deps.upstreams.get(repository, urlOf(repository, `${groupPath}/${artifactId}/${version}/${artifactId}-${version}.pom`), { accept: "*/*" }, MAX_POM_BYTES);
    } catch (err) {
      if (err instanceof UpstreamUnreachable) return undefined;
      throw err;
    }
    const at = answer.status === 200 && typeof answer.headers["last-modified"] === "string" ? new Date(answer.headers["last-modified"]) : undefined;
    return at && !Number.isNaN(at.getTime()) ? at : undefined;
  };

  /**
   * When `versions` were published at the upstream: from this process's cache, else from
   * Postgres (what any node learned before, also on a read-only node), else asked of the
   * upstream and kept (the first time kept is every node's answer). Absent: not known.
   */
  const publishedAt = async (repository: string, groupPath: string, artifactId: string, versions: readonly string[]): Promise<Map<string, Date>> => {
    const out = new Map<string, Date>();
    const missing: string[] = [];
    for (const v of versions) {
      const at = published.get(keyOf(repository, groupPath, artifactId, v));
      if (at) out.set(v, at);
      else missing.push(v);
    }
    if (missing.length === 0) return out;
    const k = { repository, groupId: groupPath.split("/").join("."), artifactId };
    const stored = await deps.store.publishTimes(k, missing);
    for (const v of missing) {
      let at = stored.get(v);
      if (!at && !deps.readOnly) {
        const asked = await askUpstream(repository, groupPath, artifactId, v);
        if (asked) at = await deps.store.rememberPublishTime(k, v, asked);
      }
      if (!at) continue;
      keep(keyOf(repository, groupPath, artifactId, v), at);
      out.set(v, at);
    }
    return out;
  };

  /**
   * The versions of an artifact too young to list or fetch. The cooldown is asked first with no
   * times known: when it names none, no minimum age applies and no upstream .pom is asked; else
   * the times of the versions it named are looked up and it is asked again.
   */
  const young = async (repository: string, groupPath: string, artifactId: string, versions: readonly string[]): Promise<ReadonlyMap<string, string>> => {
    if (!deps.tooYoung || versions.length === 0) return new Map();
    const name = `${groupPath.split("/").join(".")}:${artifactId}`;
    const unknown = await deps.tooYoung(repository, name, new Map(versions.map((v) => [v, undefined])));
    if (unknown.size === 0) return unknown;
    const known = await publishedAt(repository, groupPath, artifactId, [...unknown.keys()]);
    return deps.tooYoung(repository, name, new Map([...unknown.keys()].map((v) => [v, known.get(v)])));
  };

  /** Where a file comes from and what it must hash to: the upstream's `.sha1` of it. */
  const source = async (repository: string, path: string, f: MavenFile | undefined): Promise<FileSource> => {
    const segments = path.split("/");
    if (f) {
      const refused = await young(repository, segments.slice(0, -3).join("/"), f.artifactId, [f.version]);
      const why = refused.get(f.version);
      if (why !== undefined) throw new CooldownRefusal("not_found", `${f.groupId}:${f.artifactId}:${f.version} is not fetched from the upstream of ${repository}: ${why}`, { repository, path, name: `${f.groupId}:${f.artifactId}`, version: f.version });
    }
    const url = urlOf(repository, path);
    const what = f ? `${f.file} of ${f.groupId}:${f.artifactId}:${f.version}` : path;
    let answer: UpstreamAnswer;
    try {
      answer = await deps.upstreams.get(repository, `${url}.sha1`, { accept: "text/plain, */*" }, MAX_SHA1_BYTES);
    } catch (err) {
      if (!(err instanceof UpstreamUnreachable)) throw err;
      deps.upstreams.healthOf(repository).failed();
      throw badGateway(`the upstream of ${repository} did not answer for ${what}.sha1 and ${what} is not cached: ${err.message}`);
    }
    const publish = f ? { publish: deps.deploy } : {};
    if (answer.status === 404 || answer.status === 410) {
      // Maven's own default (checksumPolicy "warn"): a repository that writes no .sha1 is still served.
      deps.log.warn({ repository, path }, "maven proxy: the upstream has no .sha1 for a file; it is stored unchecked if the upstream has the file");
      return { url, digests: {}, what, ...publish };
    }
    if (answer.status !== 200) {
      if (answer.status >= 500 || answer.status === 429) deps.upstreams.healthOf(repository).failed();
      throw badGateway(`the upstream of ${repository} answered ${answer.status} for ${what}.sha1, and ${what} is not cached`);
    }
    const sha1 = declaredSha1(answer.body.toString("utf8"));
    if (!sha1) {
      deps.log.error({ repository, path }, "maven proxy: the upstream's .sha1 holds no SHA-1; refused, nothing fetched");
      throw badGateway(`${what} from the upstream of ${repository} was refused: its .sha1 holds no SHA-1 digest`);
    }
    return { url, digests: { sha1: [{ hex: sha1, header: ".sha1" }] }, what, ...publish };
  };

  return {
    /**
     * An import's listing (domain/proxy-import.ts) of `groupId:artifactId` (every release the
     * upstream's maven-metadata.xml lists) or `groupId:artifactId:version`: each version's .pom
     * and, unless its packaging is `pom`, its main artifact (`.jar`, or the packaging's own
     * extension for war, ear, rar, aar and zip). Snapshots are not imported.
     */
    async importPaths(repository: string, spec: string): Promise<string[]> {
      const { name, version } = mavenSpec(spec);
      const [groupId, artifactId] = name.split(":") as [string, string];
      const dir = `${groupId.split(".").join("/")}/${artifactId}`;
      let versions: string[];
      if (version !== undefined) versions = [version];
      else {
        const doc = await deps.documents.get(repository, `maven:${dir}/maven-metadata.xml`, urlOf(repository, `${dir}/maven-metadata.xml`), METADATA_KIND);
        if (!doc) throw notFound(`the upstream of ${repository} has no ${name}`);
        versions = parseArtifactMetadata(doc.body).versions.filter((v) => !isSnapshot(v));
      }
      const paths: string[] = [];
      for (const v of versions) {
        const pom = `${dir}/${v}/${artifactId}-${v}.pom`;
        paths.push(pom);
        let packaging = "jar";
        try {
          const answer = await deps.upstreams.get(repository, urlOf(repository, pom), { accept: "*/*" }, MAX_POM_BYTES);
          if (answer.status === 404 || answer.status === 410) {
            if (version !== undefined) throw notFound(`the upstream of ${repository} has no ${name}:${v}`);
            continue;
          }
          packaging = /<packaging>\s*([^<\s]+)\s*<\/packaging>/.exec(answer.body.toString("utf8"))?.[1] ?? "jar";
        } catch (err) {
          // The upstream failing here: the .pom's own fetch says why, and the main artifact is tried as a jar.
          if (!(err instanceof UpstreamUnreachable)) throw err;
        }
        if (packaging !== "pom") paths.push(`${dir}/${v}/${artifactId}-${v}.${OWN_EXTENSION.has(packaging) ? packaging : "jar"}`);
      }
      return paths;
    },

    /**
     * Makes sure a file is stored before it is served (a file of a version, `f`, as a deploy
     * stores it; any other file as it is): fetched on its first request, once however many ask.
     */
    file(repository: string, path: string, f: MavenFile | undefined, opts?: { live?: boolean }): Promise<LiveFile | undefined> {
      return deps.upstreams.file(repository, path, () => source(repository, path, f), opts);
    },

    /**
     * `<dir>/maven-metadata.xml` as the proxy serves it: the upstream's document (cached,
     * revalidated, stale when the upstream fails), a version list without the versions held
     * here, held or refused by the gate, or too young, `<latest>`/`<release>` repaired. A
     * snapshot version's document is the upstream's as it is. Undefined: the upstream has none,
     * or every version it lists is hidden.
     */
    async metadata(repository: string, dir: readonly string[]): Promise<ServedMetadata | undefined> {
      const path = [...dir, "maven-metadata.xml"].join("/");
      const doc = await deps.documents.get(repository, `maven:${path}`, urlOf(repository, path), METADATA_KIND);
      if (!doc) return undefined;
      const headers = doc.stale ? staleHeaders(doc.fetchedAt.getTime(), now()) : {};
      const versions = dir.length >= 2 && !isSnapshot(dir[dir.length - 1]!) ? parseArtifactMetadata(doc.body).versions : [];
      if (versions.length === 0) return { body: doc.body, headers };
      const artifactId = dir[dir.length - 1]!;
      const groupPath = dir.slice(0, -1).join("/");
      const groupId = dir.slice(0, -1).join(".");
      const [held, verdicts, tooYoung] = await Promise.all([
        deps.store.heldVersions({ repository, groupId, artifactId }),
        deps.screenVersions ? deps.screenVersions(repository, `${groupId}:${artifactId}`, versions) : new Map<string, { action: string }>(),
        young(repository, groupPath, artifactId, versions),
      ]);
      const hidden = new Set(versions.filter((v) => held.has(v) || tooYoung.has(v) || verdicts.get(v)?.action === "BLOCK" || verdicts.get(v)?.action === "HOLD"));
      if (hidden.size === versions.length) return undefined;
      return { body: filterArtifactMetadata(doc.body, hidden), headers };
    },
  };
}
export type MavenProxy = ReturnType<typeof mavenProxyFactory>;
