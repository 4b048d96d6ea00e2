import { conflict, forbidden, invalid, notFound, type Actor } from "@svc/contracts";
import { isRepositoryName } from "@svc/grants";
import type { BlobStore } from "@svc/blobs";
import type { MetadataStore, RepositoryDetail } from "../store/metadata-store.js";
import { READ_ONLY, type ArtifactService } from "./artifact-service.js";
import { parseUpstream, upstreamRefusal, type Lookup, type UpstreamCredentials } from "../proxy/upstream.js";
import type { RepositoryList } from "./repository-list.js";
import { membersRefusal, parseMembers } from "./group-members.js";
import { parseQuotaBytes } from "./quota.js";
import type { RepositoryScopeChange } from "@svc/contracts";

export interface RepositoryAdminDeps {
  metadata: Pick<MetadataStore, "createRepository" | "createGroup" | "setMembers" | "repository" | "closeRepository" | "dropRepository" | "page" | "setQuota" | "setScopeFromPath">;
  blobs: Pick<BlobStore, "readOnly">;
  artifacts: Pick<ArtifactService, "remove">;
  list: Pick<RepositoryList, "refresh">;
  /** The names repositories may be created with (the format table's: formats/index.ts). */
  formats: readonly string[];
  /** The formats whose repositories may be proxies; none when absent. */
  proxyFormats?: readonly string[];
  /** svc.block-private-import-hosts as it is now. */
  blockPrivate?: () => boolean;
  /** Seals upstream credentials for storage (proxy/upstream.ts sealCredentials with svc.internal-secret). */
  seal?: (c: UpstreamCredentials) => string;
  /** How an upstream's host is resolved (tests); the system's resolver by default. */
  lookup?: Lookup;
  /** Tells every gateway a repository's scopeFromPath as it is now (false once removed): the control subject `repositories`. */
  announce?: (change: RepositoryScopeChange) => void;
}

/** What `POST /api/repositories` asks for beside the name and format. */
export interface RepositoryKind {
  type?: string;
  upstream?: unknown;
  /** A group's members, in the order they are asked. */
  members?: unknown;
  /** The storage quota in bytes (domain/quota.ts); absent or null: none. */
  quotaBytes?: unknown;
  /** Authorise a request without Service-Repository-Name against this repository instead of `*`; absent: false. */
  scopeFromPath?: boolean;
}

/** Artifacts removed per metadata page while a repository is emptied. */
const PAGE = 500;

/** Creating, showing and removing repositories (the admin API's `/api/repositories/<name>`). */
export function repositoryAdminFactory(deps: RepositoryAdminDeps) {
  const { metadata } = deps;
  const announce = (r: RepositoryDetail): RepositoryDetail => {
    deps.announce?.({ repository: r.name, scopeFromPath: r.scopeFromPath });
    return r;
  };
  return {
    async create(name: string, format: string, kind: RepositoryKind = {}): Promise<RepositoryDetail> {
      if (!isRepositoryName(name)) throw invalid("name", "name must be a repository name: letters, digits, '.', '_' and '-', starting with a letter or digit");
      if (!deps.formats.includes(format)) throw invalid("format", `format must be one of ${deps.formats.join(", ")}`);
      const type = kind.type ?? "hosted";
      if (type !== "hosted" && type !== "proxy" && type !== "group") throw invalid("type", "type must be hosted, proxy or group");
      let proxy: { url: string; sealed: string | null } | undefined;
      if (type !== "proxy" && kind.upstream !== undefined) throw invalid("upstream", 'upstream is given only with "type": "proxy"');
      if (type !== "group" && kind.members !== undefined) throw invalid("members", 'members is given only with "type": "group"');
      const quotaBytes = kind.quotaBytes === undefined ? null : parseQuotaBytes(kind.quotaBytes);
      if (type === "group" && quotaBytes !== null) throw invalid("quotaBytes", "a group holds no files of its own: set a quota on its members");
      if (type === "group") {
        const members = parseMembers(name, kind.members);
        if (!(await metadata.createGroup(name, format, members, (found) => membersRefusal(name, format, members, found), kind.scopeFromPath === true))) throw conflict(`a repository named ${name} exists already`);
        await deps.list.refresh();
        return announce((await metadata.repository(name))!);
      }
      if (type === "proxy") {
        const proxies = deps.proxyFormats ?? [];
        if (!proxies.includes(format)) throw invalid("type", `a ${format} repository cannot be a proxy here (proxy repositories: ${proxies.join(", ") || "none"})`);
        const upstream = parseUpstream(kind.upstream);
        const refusal = await upstreamRefusal(upstream.url, deps.blockPrivate?.() ?? true, deps.lookup);
        if (refusal) throw invalid("upstream.url", refusal);
        if (upstream.credentials && !deps.seal) throw invalid("upstream.credentials", "this server cannot store upstream credentials");
        proxy = { url: upstream.url, sealed: upstream.credentials ? deps.seal!(upstream.credentials) : null };
      }
      if (!(await metadata.createRepository(name, format, proxy, quotaBytes ?? undefined, kind.scopeFromPath === true))) throw conflict(`a repository named ${name} exists already`);
      await deps.list.refresh();
      return announce((await metadata.repository(name))!);
    },

    async show(name: string): Promise<RepositoryDetail> {
      const r = await metadata.repository(name);
      if (!r) throw notFound(`no repository named ${name}`);
      return r;
    },

    /**
     * Sets or removes (null) a repository's storage quota (`PATCH /api/repositories/<name>`).
     * A quota below what it holds is allowed: nothing goes, further writes that add to it are refused.
     */
    async setQuota(name: string, value: unknown): Promise<RepositoryDetail> {
      const quotaBytes = parseQuotaBytes(value);
      const r = await metadata.repository(name);
      if (!r) throw notFound(`no repository named ${name}`);
      if (r.type === "group" && quotaBytes !== null) throw invalid("quotaBytes", "a group holds no files of its own: set a quota on its members");
      if (!(await metadata.setQuota(name, quotaBytes))) throw notFound(`no repository named ${name}`);
      await deps.list.refresh();
      return (await metadata.repository(name))!;
    },

    /**
     * Switches whether a request without Service-Repository-Name is authorised against this
     * repository (`PATCH /api/repositories/<name> {"scopeFromPath"}`); every gateway hears it at once.
     */
    async setScopeFromPath(name: string, on: boolean): Promise<RepositoryDetail> {
      if (!(await metadata.setScopeFromPath(name, on))) throw notFound(`no repository named ${name}`);
      await deps.list.refresh();
      return announce((await metadata.repository(name))!);
    },

    /**
     * Sets a group's members, in the order they are asked (`PUT /api/repositories/<name>/members`):
     * checked as at creation; 409 for a repository that is not a group.
     */
    async setMembers(name: string, members: unknown): Promise<RepositoryDetail> {
      const r = await metadata.repository(name);
      if (!r) throw notFound(`no repository named ${name}`);
      const notGroup = (type: string) => conflict(`${name} is a ${type} repository: only a group repository has members`);
      if (r.type !== "group") throw notGroup(r.type);
      const list = parseMembers(name, members);
      const type = await metadata.setMembers(name, list, (found) => membersRefusal(name, r.format, list, found));
      if (type === undefined) throw notFound(`no repository named ${name}`);
      if (type !== "group") throw notGroup(type);
      await deps.list.refresh();
      return (await metadata.repository(name))!;
    },

    /**
     * Removes a repository. Refused (409) while it holds artifacts, or while a group names it as
     * a member, unless forced; forced, it leaves every group that names it (as Nexus removes a
     * deleted repository from its groups) and each
     * artifact is removed as a DELETE would (its `artifact.removed` event goes out) before the
     * repository goes. Answers how many artifacts were removed.
     *
     * The repository is closed first: publishes under way land before that (and are removed
     * with the rest), later ones answer 404 and write nothing, so the removal never chases new
     * uploads and nothing is written into a folder it removed. A removal cut short leaves the
     * repository closed; asking again finishes it.
     */
    async remove(name: string, force: boolean, actor: Actor): Promise<number> {
      const r = await metadata.closeRepository(name, (held) => {
        if (held.artifacts > 0 && !force) {
          throw conflict(`repository ${name} holds ${held.artifacts} artifact(s): remove them first, or add ?force=true to remove them with it`);
        }
        if (held.groups.length > 0 && !force) {
          const groups = held.groups.join(", ");
          throw conflict(`repository ${name} is a member of group ${groups}: take it out (PUT /api/repositories/<group>/members), or add ?force=true to remove it from ${held.groups.length > 1 ? "them" : "it"} with the repository`);
        }
        if (deps.blobs.readOnly) throw forbidden(READ_ONLY);
      });
      if (!r) throw notFound(`no repository named ${name}`);
      let removed = 0;
      for (;;) {
        const rows = await metadata.page(name, undefined, PAGE);
        if (rows.length === 0) break;
        let now = 0;
        for (const row of rows) {
          if (await deps.artifacts.remove({ repository: name, segments: row.path.split("/"), path: row.path }, actor)) now++;
        }
        removed += now;
        if (now === 0) break;
      }
      // Its blobs stay for the walker's reclaim: other repositories may hold the same content.
      await metadata.dropRepository(name);
      await deps.list.refresh();
      // A repository made again under this name starts with the option off.
      if (r.scopeFromPath) deps.announce?.({ repository: name, scopeFromPath: false });
      return removed;
    },
  };
}
export type RepositoryAdmin = ReturnType<typeof repositoryAdminFactory>;
