import type { FastifyBaseLogger } from "fastify";
import pg from "pg";
import { notFound } from "@svc/contracts";
import { CooldownRefusal, type ScreenVersions, type TooYoung } from "../format.js";
import { badGateway, type FileSource, type LiveFile, type Upstreams } from "../../proxy/file-fetch.js";
import type { DocumentKind, ProxiedDocuments } from "../../proxy/proxied-documents.js";
import { staleHeaders } from "../../proxy/upstream-health.js";
import type { ArtifactService } from "../../domain/artifact-service.js";
import { SCHEMA } from "../../store/schema.js";
import { projectPageHtml, projectPageJson, JSON_TYPE } from "./pypi-index.js";
import { invalidProjectPage, proxiedFiles, publishTimes, pypiSpec, readProjectPage, type ProxiedFile } from "./pypi-proxy.js";
import type { PypiStore } from "./pypi-store.js";

export interface PypiProxyDeps {
  pool: pg.Pool;
  /** The upstreams asked and the files fetched once (proxy/file-fetch.ts). */
  upstreams: Upstreams;
  /** The project pages kept (proxy/proxied-documents.ts). */
  documents: ProxiedDocuments;
  store: Pick<PypiStore, "insertFile">;
  /** Stores a fetched file (with its index row beside it). */
  artifacts: Pick<ArtifactService, "publish">;
  /** The screening gate's verdicts on a project's versions before they are fetched: BLOCK and HOLD hide them. */
  screenVersions?: ScreenVersions;
  /** The cooldown: versions too young to be fetched or listed. */
  tooYoung?: TooYoung;
  log: FastifyBaseLogger;
  now?: () => number;
}

/** PEP 691 JSON first (it carries PEP 700's upload times, which the cooldown reads), PEP 503 HTML from an upstream without it. */
const PAGE: DocumentKind = { accept: `${JSON_TYPE}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1`, invalid: invalidProjectPage };

/** The upstream's simple index: `<url>/simple/`; an upstream URL that is the index itself (ends in `/simple`) is taken as it is. */
export const upstreamIndex = (url: string): string => `${url.replace(/\/+$/, "").replace(/\/simple$/, "")}/simple/`;

const documentKey = (project: string) => `simple/${project}/`;

/**
 * The PyPI side of a proxy repository (docs/integration/pypi.md, "Proxy repositories"): project
 * pages fetched from the upstream's simple index and kept as proxied documents (TTL, revalidation,
 * stale serving, a 30 s negative cache), served in this server's own HTML or JSON with file links
 * to this server, versions the gate refuses or holds and versions too young left out; files
 * fetched once from the URL the page names, checked against its `#sha256=`, stored through the
 * artifact service with their index rows, as an upload stores them.
 */
export function pypiProxyFactory(deps: PypiProxyDeps) {
  const now = deps.now ?? Date.now;
  const { upstream } = deps.upstreams;

  /** The upstream's page of `project` (normalised): its files and whether it is served stale; undefined: the upstream has no such project. */
  const upstreamPage = async (repository: string, project: string): Promise<{ files: ProxiedFile[]; fetchedAt: Date; stale: boolean } | undefined> => {
    const url = `${upstreamIndex(upstream(repository).url)}${encodeURIComponent(project)}/`;
    const doc = await deps.documents.get(repository, documentKey(project), url, PAGE);
    return doc && { files: proxiedFiles(project, readProjectPage(doc.body, url)), fetchedAt: doc.fetchedAt, stale: doc.stale };
  };

  /** The versions a client may not see, with why: held here, refused or held by the gate if fetched, too young. */
  const hiddenVersions = async (repository: string, project: string, files: readonly ProxiedFile[]): Promise<Map<string, string>> => {
    const hidden = new Map<string, string>();
    const held = await deps.pool.query<{ path: string }>(
      `select path from ${pg.escapeIdentifier(SCHEMA)}.artifacts where repository = $1 and held_reason is not null and (path collate "C") >= ($2 collate "C") and (path collate "C") < ($3 collate "C")`,
      [repository, `packages/${project}/`, `packages/${project}0`],
    );
    const heldPaths = new Set(held.rows.map((r) => r.path));
    for (const f of files) if (heldPaths.has(f.path)) hidden.set(f.version, `${f.filename} is held here`);
    const times = publishTimes(files);
    const versions = [...times.keys()];
    const verdicts = deps.screenVersions ? await deps.screenVersions(repository, project, versions) : new Map<string, { action: string; reason: string }>();
    for (const [version, v] of verdicts) if (v.action === "BLOCK" || v.action === "HOLD") hidden.set(version, v.reason);
    const young = deps.tooYoung ? await deps.tooYoung(repository, project, times) : new Map<string, string>();
    for (const [version, why] of young) hidden.set(version, why);
    return hidden;
  };

  /** The files a project's page lists (the hidden versions' left out), and whether the page is stale; undefined: the upstream has no such project. */
  const shownPage = async (repository: string, project: string): Promise<{ shown: ProxiedFile[]; fetchedAt: Date; stale: boolean } | undefined> => {
    const p = await upstreamPage(repository, project);
    if (!p) return undefined;
    const hidden = await hiddenVersions(repository, project, p.files);
    return { shown: p.files.filter((f) => !hidden.has(f.version)), fetchedAt: p.fetchedAt, stale: p.stale };
  };

  return {
    /**
     * A project's page as this server serves it (its own HTML or PEP 691 JSON, links to its own
     * `packages/`), with Warning and Age when stale; undefined: the upstream has no such project.
     */
    async page(repository: string, project: string, type: string): Promise<{ body: string; headers: Record<string, string> } | undefined> {
      const p = await shownPage(repository, project);
      if (!p) return undefined;
      return { body: type === JSON_TYPE ? projectPageJson(project, p.shown) : projectPageHtml(project, p.shown), headers: p.stale ? staleHeaders(p.fetchedAt.getTime(), now()) : {} };
    },

    /** The files `page` lists (a group merges them with its other members'); undefined: the upstream has no such project. */
    async files(repository: string, project: string): Promise<ProxiedFile[] | undefined> {
      return (await shownPage(repository, project))?.shown;
    },

    /** An import's files of `spec` at the upstream (domain/proxy-import.ts): every file of the project, or of the version named. */
    async paths(repository: string, spec: string): Promise<string[]> {
      const { name, version } = pypiSpec(spec);
      const p = await upstreamPage(repository, name);
      if (!p) throw notFound(`the upstream of ${repository} has no project ${name}`);
      const files = version === undefined ? p.files : p.files.filter((f) => f.version === version);
      if (files.length === 0) throw notFound(`the upstream of ${repository} has no files of ${name} ${version ?? ""}`.trimEnd());
      return files.map((f) => f.path);
    },

    /** The projects whose pages this proxy repository holds (its `/simple/` answers these: the upstream's whole list is not fetched). */
    async projects(repository: string): Promise<string[]> {
      const r = await deps.pool.query<{ key: string }>(
        `select key from ${pg.escapeIdentifier(SCHEMA)}.proxy_documents where repository = $1 and body is not null and key like 'simple/%/' order by key collate "C"`,
        [repository],
      );
      return r.rows.map((row) => row.key.slice("simple/".length, -1)).filter((p) => p !== "");
    },

    /**
     * Makes sure `packages/<project>/<version>/<file>` is stored before it is served as a file:
     * fetched from the URL the upstream's page names on its first request, once however many ask.
     */
    file(repository: string, project: string, version: string, filename: string, path: string, opts?: { live?: boolean }): Promise<LiveFile | undefined> {
      return deps.upstreams.file(repository, path, async (): Promise<FileSource> => {
        const p = await upstreamPage(repository, project);
        const f = p?.files.find((x) => x.filename === filename && x.version === version);
        if (!p || !f) throw notFound(`no ${filename} in ${repository} or its upstream`);
        // The gate screens the file as it is stored (a refusal stores nothing, a hold stores it held); the cooldown is asked here.
        const young = deps.tooYoung ? (await deps.tooYoung(repository, project, new Map([[version, publishTimes(p.files).get(version)]]))).get(version) : undefined;
        if (young !== undefined) throw new CooldownRefusal("forbidden", `${project} ${version} is not fetched from the upstream of ${repository}: ${young}`, { repository, path, name: project, version });
        if (!f.sha256) {
          deps.log.error({ repository, path, url: f.link.url }, "pypi proxy: the upstream declares no sha256 for a file; refused, nothing fetched");
          throw badGateway(`${filename} from the upstream of ${repository} was refused: the upstream's page declares no sha256 for it, so what arrives cannot be checked`);
        }
        return {
          url: f.link.url,
          digests: { sha256: [{ hex: f.sha256, header: "the upstream page's #sha256" }] },
          what: filename,
          // The file's index row commits with it, as an upload's does (it goes with the file: pypi-store.ts).
          publish: (a, body, contentType, actor, checks) =>
            deps.artifacts.publish(a, body, contentType, actor, checks, {
              run: async (tx, staged) => {
                await deps.store.insertFile(tx, repository, {
                  filename,
                  project,
                  displayName: f.name,
                  version,
                  path,
                  sha256: staged.sha256,
                  size: staged.size,
                  requiresPython: f.requiresPython,
                  yanked: f.yanked,
                  ...(f.uploaded ? { uploaded: f.uploaded } : {}),
                });
              },
            }),
        };
      });
    },
  };
}
export type PypiProxy = ReturnType<typeof pypiProxyFactory>;
