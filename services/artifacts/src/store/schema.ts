import type { ColumnType, Generated } from "kysely";

export const SCHEMA = "artifacts";

export interface RepositoryTable {
  name: string;
  format: string;
  created_at: ColumnType<Date, Date | undefined, never>;
  /** The repository's retention policy (see domain/retention-policy.ts); null: keep everything. */
  retention: ColumnType<unknown | null, string | null | undefined, string | null>;
  /** Set when a removal began (metadata-store closeRepository): nothing is written into it any more. */
  removing_since: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** `hosted` (what clients publish to), `proxy` (a cache of `upstream_url`) or `group` (its members behind one URL: group_members). */
  type: ColumnType<string, string | undefined, string>;
  /** A proxy repository's upstream; null for a hosted one. */
  upstream_url: string | null;
  /** A proxy's upstream credentials, sealed (proxy/upstream.ts sealCredentials); never shown. */
  upstream_credentials: string | null;
  /** The repository's storage quota in bytes (domain/quota.ts); null: none. */
  quota_bytes: ColumnType<string | null, string | number | null | undefined, string | number | null>;
  /** Without Service-Repository-Name, a request is authorised against this repository instead of `*` (the gateway's admission). */
  scope_from_path: ColumnType<boolean, boolean | undefined, boolean>;
}

/** Each repository's bytes in the path index, kept by triggers on it (store/quota-migrations.ts). */
export interface RepositoryUsageTable {
  repository: string;
  used_bytes: ColumnType<string, never, never>;
}

/** A group repository's members, in the order they are asked (position 0 first). */
export interface GroupMemberTable {
  group_name: string;
  position: number;
  /** A hosted or proxy repository of the group's format. */
  member: string;
}

export interface ArtifactTable {
  repository: string;
  path: string;
  size: ColumnType<string, number, number>;
  sha256: string;
  content_type: string | null;
  /** When the content at this path was last published (or indexed by a walk). */
  updated_at: ColumnType<Date, Date | undefined, Date>;
  /** Written in batches by the download recorder, never per request. */
  last_downloaded_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  downloads: ColumnType<string, number | undefined, number>;
  /** Set while a policy holds the artifact (retention never removes a held artifact). */
  held_reason: ColumnType<string | null, string | null | undefined, string | null>;
  held_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

/**
 * Transactional outbox: an event row is written in the same transaction as the change it
 * reports, published after the commit, and marked sent; a relay republishes what is unsent.
 */
export interface OutboxTable {
  id: string;
  seq: Generated<string>;
  kind: string;
  event: ColumnType<unknown, string, never>;
  created_at: ColumnType<Date, Date | undefined, never>;
  sent_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  attempts: ColumnType<number, number | undefined, number>;
}

/** An npm package of a repository: its dist-tags and a revision counter (`_rev`); versions are rows of npm_versions. */
export interface NpmPackageTable {
  repository: string;
  name: string;
  dist_tags: ColumnType<Record<string, string>, string | undefined, string>;
  rev: ColumnType<number, number | undefined, number>;
  created_at: ColumnType<Date, Date | undefined, never>;
  modified_at: ColumnType<Date, Date | undefined, Date>;
}

/** One published version: its manifest as published (dist.tarball kept relative), immutable but for `deprecated`. */
export interface NpmVersionTable {
  repository: string;
  name: string;
  version: string;
  manifest: ColumnType<Record<string, unknown>, string, string>;
  /** The tarball's artifact path in the repository. */
  tarball: string;
  published_at: ColumnType<Date, Date | undefined, never>;
}

/** One export of a repository into another (domain/repository-export.ts): its progress and result. */
export interface ExportTable {
  id: string;
  source: string;
  target: string;
  format: string;
  /** running, done, failed, interrupted */
  state: string;
  /** Who asked (a principal id). */
  actor: string;
  total: ColumnType<number, number | undefined, number>;
  copied: ColumnType<number, number | undefined, number>;
  skipped: ColumnType<number, number | undefined, number>;
  refused: ColumnType<number, number | undefined, number>;
  /** The first refusals, each `{ path, reason }`. */
  refusals: ColumnType<{ path: string; reason: string }[], string | undefined, string>;
  detail: string | null;
  started_at: ColumnType<Date, Date | undefined, never>;
  /** Moved on while a process works on the export; a running export whose heartbeat stopped was interrupted. */
  heartbeat_at: ColumnType<Date, Date | undefined, Date>;
  ended_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

/** A version unpublished from an npm package: it can never be published again (as on npmjs). */
export interface NpmUnpublishedTable {
  repository: string;
  name: string;
  version: string;
  unpublished_at: ColumnType<Date, Date | undefined, never>;
}

/** A version of a Maven artifact some file was deployed under (artifact-level maven-metadata.xml lists them). */
export interface MavenVersionTable {
  repository: string;
  group_id: string;
  artifact_id: string;
  version: string;
  // Updated only to an earlier time: a file the walker backfills may predate the first deploy recorded.
  deployed_at: ColumnType<Date, Date | undefined, Date>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

/** When a Maven proxy repository's upstream published a version (the cooldown's question), learned once. */
export interface MavenPublishTimeTable {
  repository: string;
  group_id: string;
  artifact_id: string;
  version: string;
  published_at: Date;
  learned_at: ColumnType<Date, Date | undefined, never>;
}

/** One file of a unique snapshot build (version-level maven-metadata.xml of `-SNAPSHOT` versions). */
export interface MavenSnapshotTable {
  repository: string;
  group_id: string;
  artifact_id: string;
  version: string;
  classifier: string;
  extension: string;
  value: string;
  timestamp: string;
  build_number: number;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

/** The digests Maven clients ask for, per content (SHA-256): computed once while the content arrives. */
export interface MavenDigestTable {
  sha256: string;
  sha1: string;
  md5: string;
  sha512: string;
}

/** Per-repository Maven options. */
export interface MavenSettingsTable {
  repository: string;
  /** Whether a release version's files may be deployed again (snapshots always may). */
  release_redeploy: boolean;
}

/** A file of a PyPI project (a wheel or an sdist): what the simple index lists; the file itself is an artifact at `path`. */
export interface PypiFileTable {
  repository: string;
  /** The file name as uploaded; unique in a repository, as on PyPI. */
  filename: string;
  /** The project name normalised per PEP 503. */
  project: string;
  /** The name as the uploader spelt it (the index shows the normalised one). */
  display_name: string;
  version: string;
  path: string;
  sha256: string;
  size: ColumnType<string, number, never>;
  requires_python: string | null;
  /** PEP 592: null when not yanked, else the reason ("" when none was given). */
  yanked: ColumnType<string | null, string | null | undefined, string | null>;
  uploaded_at: ColumnType<Date, Date | undefined, never>;
}

/** A packument of a proxy repository's upstream as last fetched (or a definite miss), with its validator. */
export interface NpmProxyDocumentTable {
  repository: string;
  name: string;
  /** The upstream's document as it answered (JSON text); null: the upstream answered 404. */
  document: string | null;
  etag: string | null;
  fetched_at: ColumnType<Date, Date | undefined, Date>;
}

export interface ArtifactsDatabase {
  npm_proxy_documents: NpmProxyDocumentTable;
  exports: ExportTable;
  npm_unpublished: NpmUnpublishedTable;
  maven_versions: MavenVersionTable;
  maven_snapshots: MavenSnapshotTable;
  maven_digests: MavenDigestTable;
  maven_settings: MavenSettingsTable;
  maven_publish_times: MavenPublishTimeTable;
  pypi_files: PypiFileTable;
  npm_packages: NpmPackageTable;
  npm_versions: NpmVersionTable;
  repositories: RepositoryTable;
  group_members: GroupMemberTable;
  repository_usage: RepositoryUsageTable;
  artifacts: ArtifactTable;
  outbox: OutboxTable;
}
