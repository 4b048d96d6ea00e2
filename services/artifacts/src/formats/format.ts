import type { TSchema } from "@sinclair/typebox";
import type { Migration } from "kysely";
import type { BlobStore } from "@svc/blobs";
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from "fastify";
import type pg from "pg";
import { ServiceError, type PackageCoordinates } from "@svc/contracts";
import type { ArtifactTarget } from "@svc/grants";
import type { ServiceApp } from "@svc/kit";
import type { Address, ArtifactService } from "../domain/artifact-service.js";
import type { UpstreamConfig } from "../proxy/upstream.js";
import type { LiveFile, Upstreams } from "../proxy/file-fetch.js";
import type { FormatExport, FormatExports } from "../domain/repository-export.js";
import type { FormatImport } from "../domain/proxy-import.js";
import type { Db, MetadataStore } from "../store/metadata-store.js";
import type { Ecosystem } from "../gate/ecosystems.js";
import type { GroupMember } from "../domain/repository-list.js";
import type { AdvisoryAudit } from "../gate/audit.js";
import type { ByteRedirect } from "../routes/artifact-answer.js";

/**
 * A format's protocol under `/repository/<repository>/…` (every method): it answers the request,
 * or returns undefined to leave it to the file routes (GET/HEAD send the file, PUT stores the body
 * through the format's `publish`, DELETE removes the file; other methods are refused with 405).
 */
export type FormatHandler = (req: FastifyRequest, reply: FastifyReply, a: ArtifactTarget) => Promise<unknown> | undefined;

/**
 * What a format's group handler (Format.group) is given about a group repository: its members in
 * order, and how to find the member holding a file (routes/group-dispatch.ts).
 */
export interface GroupContext {
  /** The group's members, in the order they are asked. */
  members: readonly GroupMember[];
  /**
   * The first member that holds `path` (and serves it: not held there), a proxy member fetching
   * it through its format's `beforeRead` when no earlier member has it; undefined when none has
   * it. When none has it but one refused (a hold, the gate, its upstream failing), that refusal
   * is thrown.
   */
  locate(path: string): Promise<GroupMember | undefined>;
  /** The request answered by `member`'s own protocol (`handle`) at the same path; undefined when that leaves it to the file routes. */
  delegate(member: GroupMember): Promise<unknown> | undefined;
  /**
   * What `read` answers for each member, at once, in member order (undefined: it has nothing). A
   * member whose read fails (a proxy whose upstream is down with nothing cached) is passed over,
   * logged: its failure is thrown only when no member answered anything.
   */
  each<T>(read: (member: GroupMember) => Promise<T | undefined>): Promise<(T | undefined)[]>;
}

/**
 * A read (GET or HEAD) of a group repository: answers what the group serves itself (metadata
 * merged from its members), or returns undefined to leave it to the group's file reads (the
 * first member that has the path). Writes through a group never reach it: they go to the
 * group's first hosted member, and removals are refused (routes/group-dispatch.ts).
 */
export type GroupHandler = (req: FastifyRequest, reply: FastifyReply, a: ArtifactTarget, group: GroupContext) => Promise<unknown> | undefined;

/** What every format is built from: the service's shared stores and services (wiring.ts builds them once). */
export interface FormatDeps {
  /** The service's database (its schema holds the formats' tables: each format's `migrations`). */
  db: Db;
  pool: pg.Pool;
  metadata: MetadataStore;
  /** Content by digest; the path index (metadata) says which path holds which. */
  blobs: BlobStore;
  /** svc.storage.s3.redirect: where a GET's bytes are fetched from instead of this service (a format that serves stored bytes as they are may use it). */
  redirect?: ByteRedirect;
  /** Every change to an artifact goes through it (its blob made sure of, its index row and its event, in one transaction). */
  artifacts: ArtifactService;
  /** The format of a repository served (a format's own admin routes refuse repositories of another). */
  formatOf: (repository: string) => string | undefined;
  /** svc.read-only. */
  readOnly: boolean;
  /** svc.ui.public-url: the deployment's public base URL; blank: the address a client used. */
  publicUrl: string;
  /** Whether a keyless caller may read a repository, as the gateway decides it (domain/anonymous-access.ts); absent: never. */
  anonymousRead?: (repository: string) => boolean;
  log: FastifyBaseLogger;
  /** Proxy repositories (docs/integration/npm.md, "Proxy repositories"); absent: none are served. */
  proxy?: ProxyDeps;
  /** The screening gate's advisory data, read for clients' audits (`npm audit`); absent: none answered. */
  audit?: AdvisoryAudit;
}

/** The gate's verdicts on versions of one package, by version; versions nothing matched are absent. */
export type ScreenVersions = (repository: string, name: string, versions: readonly string[]) => Promise<ReadonlyMap<string, { action: "BLOCK" | "HOLD" | "WARN"; reason: string }>>;

/** What a format serving proxy repositories needs beside the shared deps. */
export interface ProxyDeps {
  /** A proxy repository's upstream, its credentials opened; undefined for a hosted repository. */
  upstreamOf: (repository: string) => UpstreamConfig | undefined;
  /** The upstreams asked (health, the address rule, credentials) and files fetched once across nodes, streamed into the store (proxy/file-fetch.ts). */
  upstreams: Upstreams;
  /** The settings as they are now (svc.proxy.metadata-ttl, svc.proxy.metadata-stale-while-revalidate, svc.block-private-import-hosts change at run time). */
  settings: () => { metadataTtlMs: number; metadataStaleMs: number; blockPrivate: boolean };
  /** The screening gate's verdicts on versions of a package before they are fetched (what would be refused or held is not listed). */
  screenVersions?: ScreenVersions;
  /**
   * The cooldown (svc.gate.min-age, its per-repository override, break-glass allows): of a
   * package's versions with their upstream publish times (undefined: not known), those too young
   * to fetch or list. A version whose time is not known counts as too young when a minimum age
   * applies (fail closed). Absent: no cooldown.
   */
  tooYoung?: TooYoung;
}

/** The versions of `name` in `repository` too young to be fetched or listed (ProxyDeps.tooYoung), with why. */
export type TooYoung = (repository: string, name: string, published: ReadonlyMap<string, Date | undefined>) => Promise<ReadonlyMap<string, string>>;

/** The file of a version the cooldown keeps back, as a refusal names it. */
export interface YoungFile {
  repository: string;
  path: string;
  /** The package as the ecosystem names it (npm's name, the normalised PyPI project, Maven's groupId:artifactId). */
  name: string;
  version: string;
}

/**
 * A request for a file of a version the cooldown keeps back, refused (403; Maven's 404): the
 * route that answers the request records it in the refusal log with who asked
 * (routes/raw-routes.ts); the message is what the client is told.
 */
export class CooldownRefusal extends ServiceError {
  constructor(
    code: "forbidden" | "not_found",
    message: string,
    readonly file: YoungFile,
  ) {
    super(code, message);
  }
}

/**
 * What a format does, beyond files served path for path (docs/internals/formats.md). Each part
 * is optional: a format without any is the raw one.
 */
export interface Format {
  /** Its protocol under `/repository/<repository>/…`; absent: plain files only. */
  handle?: FormatHandler;
  /** Whether folder URLs (ending in `/`) reach `handle` (PyPI's index pages); elsewhere they are refused as bad paths. */
  servesFolders?: boolean;
  /** Its own routes besides (an admin API under `/api/repositories/<name>/<format>/…`), registered once. */
  routes?: (app: ServiceApp) => void;
  /** How a file PUT through the file routes is stored (Maven: with its digests and version rows); default artifacts.publish. */
  publish?: ArtifactService["publish"];
  /**
   * The format's rows about a file that goes, whatever removes it (a DELETE, retention, a walk's
   * repair of a file gone, a forced repository removal): in the transaction that forgets the
   * file's index row, under its path's lock.
   */
  removing?: (tx: Db, a: Address) => Promise<void>;
  /**
   * The rows a publish would have added for a path of the index (a walk's backfill, the migration
   * of a legacy data folder), under the path's lock; `at` is the path's publish time.
   * True (or nothing) when it added rows, false when they were all there.
   */
  indexing?: (tx: Db, a: Address, at: Date) => Promise<boolean | void>;
  /**
   * A file held or released (the screening gate, an administrator), in the transaction that
   * changes its hold, under its path's lock: the format's documents stop (or start again) listing
   * its version (an npm package's revision moves, so its cached documents are built again).
   */
  holding?: (tx: Db, a: Address) => Promise<void>;
  /** Whether repositories of this format may be proxies of an upstream (`"type": "proxy"`). */
  proxies?: boolean;
  /** Reads of its group repositories (`"type": "group"`): merged metadata; absent: a group of this format serves its members' files only (raw). */
  group?: GroupHandler;
  /**
   * Before a GET or HEAD is served as a file (after `handle` left it): a proxy repository fetches
   * what it lacks. With `live` (a GET of the whole file) it may answer the file as it arrives from
   * the upstream (proxy/file-fetch.ts); undefined: serve what is stored.
   */
  beforeRead?: (a: ArtifactTarget, opts?: { live?: boolean }) => Promise<LiveFile | undefined>;
  /** Imports into its proxy repositories (domain/proxy-import.ts): what a listed package's files are at the upstream. Absent: none. */
  imports?: Pick<FormatImport, "paths" | "spec">;
  /** Copies a repository into another of this format (`POST /api/repositories/<name>/export`); absent: refused, naming the format. */
  export?: FormatExport;
  /** The package a file is (its events carry it); undefined for a file that is no package's. */
  coordinates?: (path: string) => PackageCoordinates | undefined;
  /** What the console's package view shows of one package beyond its files (npm: dist-tags and readme; OCI: tags); absent: its files only. */
  describe?: (repository: string, name: string) => Promise<PackageAbout | undefined>;
  /** The OSV ecosystem of its packages (`npm`, `PyPI`, `Maven`): the screening gate checks each package version stored (gate/). */
  ecosystem?: Ecosystem;
  /**
   * A walk's step over one repository of this format, in the artifacts service (the walker asks
   * `POST /internal/repositories/<name>/collect` once per repository it walks): `gc` removes
   * content nothing references once older than `graceMs` (the `reclaim` job), `retention`
   * applies the format's own retention options (the `retention` job). Answers counts by name.
   * Absent: nothing to do.
   */
  collect?: (repository: string, step: CollectStep, opts: { graceMs: number }) => Promise<Record<string, number>>;
  /** Its per-repository options (FormatModule.options names them), read and set through `POST`/`PATCH /api/repositories`. */
  options?: {
    /** A repository's options as they are (shown with the repository). */
    get(repository: string): Promise<Record<string, unknown>>;
    /** Sets those of `values` that are given (validated by the fields' schemas already). */
    set(repository: string, values: Record<string, unknown>): Promise<void>;
  };
}

/** A package as its format knows it beyond the files the index holds (Format.describe). */
export interface PackageAbout {
  /** Tags to versions (npm's dist-tags) or to manifest digests (an OCI image's tags). */
  tags?: Record<string, string>;
  /** The package's readme as published (Markdown, unrendered). */
  readme?: string;
  description?: string;
  /** Each version's publish time, where the format records one apart from its files. */
  published?: Record<string, Date>;
}

/** The walk steps a format's `collect` is asked for. */
export type CollectStep = "gc" | "retention";

/** One row of the format table (formats/index.ts). */
export interface FormatModule {
  /** The name repositories are created with (`format` of `POST /api/repositories`). */
  readonly name: string;
  /** How the API's description of `format` names it: "maven (the Maven 2 layout)". */
  readonly label: string;
  /** Builds the format from the shared deps; called once per process, before anything is served. */
  create(deps: FormatDeps): Format;
  /**
   * Its own tables in the service's schema, by migration name (store/migrations.ts
   * migrationsOf): names sort in the order they run, across the service and every format.
   */
  readonly migrations?: Readonly<Record<string, Migration>>;
  /**
   * Its per-repository options, as fields of `POST /api/repositories` and `PATCH
   * /api/repositories/<name>` (OCI's `immutableTags`): each field's schema. The built format's
   * `options` reads and sets them. A field given for a repository of another format is refused.
   */
  readonly options?: Readonly<Record<string, TSchema>>;
}

/** The formats in use: each repository's, by its format name, and what the service needs of them all. */
export interface Formats {
  /** The names repositories may be created with, in the table's order. */
  readonly names: readonly string[];
  /** How the API describes `format`: "raw (files), npm, … or pypi (a package index)". */
  readonly description: string;
  /** The format of a repository served (undefined: no such repository, or it is not built yet). */
  of(repository: string): Format | undefined;
  /** The artifact service's hooks, dispatched on each repository's format. */
  readonly hooks: {
    coordinates: (repository: string, path: string) => PackageCoordinates | undefined;
    removing: (tx: Db, a: Address) => Promise<void>;
    indexing: (tx: Db, a: Address, at: Date) => Promise<boolean | void>;
    holding: (tx: Db, a: Address) => Promise<void>;
    /** Whether a repository's format has rows of its own for a backfill to restore (`indexing`). */
    indexes: (repository: string) => boolean;
  };
  /** The OSV ecosystem of a repository's format; undefined: the gate does not screen it (raw). */
  ecosystemOf(repository: string): Ecosystem | undefined;
  /** Builds every format (once): they need the artifact service, which needs the hooks above. */
  build(deps: Omit<FormatDeps, "formatOf">): void;
  /** Each format's export step, by format name. */
  exports(): FormatExports;
  /** A repository's format's import step (its `imports` listing, its `beforeRead` fetching); undefined: none. */
  importOf(repository: string): FormatImport | undefined;
  /** The names of the formats whose repositories may be proxies. */
  proxyFormats(): readonly string[];
  /** Each format as `GET /api/formats` lists it: its name, its label and whether it may be a proxy, in the table's order. */
  catalog(): readonly FormatEntry[];
  /** Every format's per-repository option fields (FormatModule.options), with the format each belongs to. */
  readonly optionFields: ReadonlyMap<string, { format: string; schema: TSchema }>;
  /** Registers each format's own routes. */
  routes(app: ServiceApp): void;
}

/** A format as `GET /api/formats` shows it (what the console's Create repository form offers). */
export interface FormatEntry {
  name: string;
  label: string;
  /** Whether its repositories may be proxies (`"type": "proxy"`); every format may have groups. */
  proxy: boolean;
}

const listed = (labels: readonly string[]): string => (labels.length < 2 ? labels.join("") : `${labels.slice(0, -1).join(", ")} or ${labels[labels.length - 1]}`);

/**
 * The formats of `table`, dispatched on each repository's format (`formatOf`). Nothing outside
 * formats/ names a format: the routes, the app and the artifact service go through this.
 */
export function formatsOf(table: readonly FormatModule[], formatOf: (repository: string) => string | undefined): Formats {
  const names = table.map((m) => m.name);
  if (new Set(names).size !== names.length) throw new Error(`the format table names a format twice: ${names.join(", ")}`);
  let built: ReadonlyMap<string, Format> | undefined;
  const all = (): ReadonlyMap<string, Format> => {
    if (!built) throw new Error("the formats are used before they are built");
    return built;
  };
  const of = (repository: string): Format | undefined => {
    const name = formatOf(repository);
    return name === undefined ? undefined : all().get(name);
  };
  return {
    names,
    description: listed(table.map((m) => m.label)),
    of,
    hooks: {
      coordinates: (repository, path) => of(repository)?.coordinates?.(path),
      removing: async (tx, a) => of(a.repository)?.removing?.(tx, a),
      indexing: async (tx, a, at) => of(a.repository)?.indexing?.(tx, a, at),
      holding: async (tx, a) => of(a.repository)?.holding?.(tx, a),
      indexes: (repository) => of(repository)?.indexing !== undefined,
    },
    ecosystemOf: (repository) => of(repository)?.ecosystem,
    build(deps) {
      if (built) throw new Error("the formats are built once");
      built = new Map(table.map((m) => [m.name, m.create({ ...deps, formatOf })]));
    },
    importOf(repository) {
      const f = of(repository);
      const fetch = f?.beforeRead;
      return f?.imports && fetch ? { paths: f.imports.paths, spec: f.imports.spec, fetch } : undefined;
    },
    proxyFormats: () => [...all()].flatMap(([name, f]) => (f.proxies ? [name] : [])),
    catalog: () => table.map((m) => ({ name: m.name, label: m.label, proxy: all().get(m.name)?.proxies === true })),
    optionFields: new Map(table.flatMap((m) => Object.entries(m.options ?? {}).map(([field, schema]) => [field, { format: m.name, schema }] as const))),
    exports: () => Object.fromEntries([...all()].flatMap(([name, f]) => (f.export ? [[name, f.export]] : []))),
    routes(app) {
      for (const f of all().values()) f.routes?.(app);
    },
  };
}
