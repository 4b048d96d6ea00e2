import { randomUUID } from "node:crypto";
import type { FastifyBaseLogger } from "fastify";
import pg from "pg";
import { ServiceError, conflict, forbidden, invalid, notFound, type Actor, type ImportState, type ImportView } from "@svc/contracts";
import { newReference } from "@svc/kit";
import type { ArtifactTarget } from "@svc/grants";
import type { MetadataStore } from "../store/metadata-store.js";
import { SCHEMA } from "../store/schema.js";
import { READ_ONLY } from "./artifact-service.js";
import type { RepositoryExport } from "./repository-export.js";

/** A format's part in imports (formats/format.ts `imports`): what one listed package is, and how a file is fetched. */
export interface FormatImport {
  /** The package (and version) a listed item names, as the format's coordinates name them (raw: the path); throws a 400 for one it cannot read. */
  spec(spec: string): { name: string; version?: string };
  /** The paths of the files `spec` names at a proxy repository's upstream ("lodash", "lodash@4.17.21"); throws a ServiceError when it names nothing there. */
  paths(repository: string, spec: string): Promise<string[]>;
  /** Fetches one of them into the proxy repository (its `beforeRead`: through the gate, once across nodes). */
  fetch(a: ArtifactTarget): Promise<unknown>;
}

/** The contract's view of an import with its packages listed, its times as dates and its export's id. */
export interface ImportRecord extends Omit<ImportView, "packages" | "export" | "started" | "ended"> {
  packages: string[];
  exportId: string | null;
  started: Date;
  ended: Date | null;
}

export interface ProxyImportDeps {
  pool: pg.Pool;
  metadata: Pick<MetadataStore, "find" | "repository">;
  /** Whether a repository is a proxy (it has an upstream). */
  isProxy: (repository: string) => boolean;
  /** A repository's format's import step; undefined: its format has none. */
  importOf: (repository: string) => FormatImport | undefined;
  exports: Pick<RepositoryExport, "start">;
  /** The package a file of a repository is (formats' coordinates); undefined: a file that is no package's (raw: its path names it). */
  coordinates: (repository: string, path: string) => { name: string; version: string } | undefined;
  readOnly: boolean;
  log: FastifyBaseLogger;
  /** How often a running import says it is alive (and a node looks for imports whose node died). */
  heartbeatMs?: number;
}

/** The most packages one import lists, and the refusals its record keeps (the count goes on). */
export const MAX_IMPORT_PACKAGES = 10_000;
const REFUSALS_KEPT = 200;
/** A running import whose heartbeat is older than this lost its node: another node (or this one, restarted) resumes it. */
export const IMPORT_STALE_MS = 15_000;

// Read as the record's own fields.
const COLUMNS = `id, repository, format, target, state, actor, packages, done, imported, skipped, held, refused, refusals, export_id as "exportId", detail, started_at as "started", ended_at as "ended"`;

type Counts = Pick<ImportRecord, "done" | "imported" | "skipped" | "held" | "refused" | "refusals">;

/** Whether a file of the repository is one of the packages (or versions) an import listed: what its export copies. */
function listedBy(step: FormatImport, packages: readonly string[], coordinates: (path: string) => { name: string; version: string } | undefined): (path: string) => boolean {
  const wanted = new Map<string, Set<string> | "every">();
  for (const p of packages) {
    const { name, version } = step.spec(p);
    const have = wanted.get(name);
    if (version === undefined) wanted.set(name, "every");
    else if (have !== "every") wanted.set(name, (have ?? new Set()).add(version));
  }
  return (path) => {
    const c = coordinates(path);
    const versions = wanted.get(c?.name ?? path);
    return versions === "every" || (versions !== undefined && c !== undefined && versions.has(c.version));
  };
}

/**
 * Imports (docs/administration/repositories.md, "Imports"): a list of packages fetched from a
 * proxy repository's upstream into it, every version of each (or the one named), each file
 * through the proxy's fetch and so through the screening gate, then, when a target is named,
 * exported into that hosted repository. The record is in Postgres; the counts and the position
 * are written together after each package, so an import stopped by a restart (or a node's
 * death) is resumed from the next package by whichever node notices first, counting nothing twice.
 */
export function proxyImportFactory(deps: ProxyImportDeps) {
  const { pool, log } = deps;
  const T = `${pg.escapeIdentifier(SCHEMA)}.imports`;
  const heartbeatMs = deps.heartbeatMs ?? 5_000;
  const running = new Map<string, { abort: AbortController; done: Promise<void> }>();
  let claimer: NodeJS.Timeout | undefined;

  const find = async (repository: string, id: string): Promise<ImportRecord | undefined> => {
    const r = await pool.query<ImportRecord>(`select ${COLUMNS} from ${T} where id = $1 and repository = $2`, [id, repository]);
    return r.rows[0];
  };
  const checkpoint = (id: string, c: Counts) =>
    pool.query(`update ${T} set done = $2, imported = $3, skipped = $4, held = $5, refused = $6, refusals = $7, heartbeat_at = now() where id = $1 and state = 'running'`, [
      id, c.done, c.imported, c.skipped, c.held, c.refused, JSON.stringify(c.refusals),
    ]);
  const finish = (id: string, state: Exclude<ImportState, "running">, detail: string | null, exportId: string | null = null) =>
    pool.query(`update ${T} set state = $2, detail = $3, export_id = $4, ended_at = now(), heartbeat_at = now() where id = $1`, [id, state, detail, exportId]);

  /** The reason an item was not imported, for its record: a refusal's own words, or a reference to the log. */
  const reasonOf = (err: unknown, what: string): string => {
    if (err instanceof ServiceError) return err.message;
    const reference = newReference();
    log.error({ err, reference, item: what }, `Unexpected failure ${reference} while importing ${what}`);
    return `an unexpected failure. Reference: ${reference}`;
  };

  const listed = (step: FormatImport, record: ImportRecord) => listedBy(step, record.packages, (path) => deps.coordinates(record.repository, path));

  const run = async (record: ImportRecord, abort: AbortController): Promise<void> => {
    const step = deps.importOf(record.repository);
    if (!step) return void (await finish(record.id, "failed", `repositories of format ${record.format} have no imports`));
    const c: Counts = { done: record.done, imported: record.imported, skipped: record.skipped, held: record.held, refused: record.refused, refusals: [...record.refusals] };
    const refuse = (path: string, reason: string) => {
      c.refused++;
      if (c.refusals.length < REFUSALS_KEPT) c.refusals.push({ path, reason });
    };
    // The heartbeat alone between packages (a package of many files takes a while): the counts go with the position.
    const beat = setInterval(() => {
      pool.query(`update ${T} set heartbeat_at = now() where id = $1 and state = 'running'`, [record.id]).catch((err: unknown) => log.warn({ err, importId: record.id }, "could not record an import's heartbeat"));
    }, heartbeatMs);
    try {
      for (let i = record.done; i < record.packages.length; i++) {
        const spec = record.packages[i]!;
        // Counted per package: a package cut short by a stop is done again whole on resumption.
        const p = { imported: 0, skipped: 0, held: 0, refused: 0, refusals: [] as { path: string; reason: string }[] };
        let paths: string[] = [];
        try {
          paths = await step.paths(record.repository, spec);
        } catch (err) {
          p.refused++;
          p.refusals.push({ path: spec, reason: reasonOf(err, spec) });
        }
        for (const path of paths) {
          if (abort.signal.aborted) return;
          if (await deps.metadata.find(record.repository, path)) {
            p.skipped++;
            continue;
          }
          try {
            await step.fetch({ repository: record.repository, segments: path.split("/"), path, folder: false });
            const row = await deps.metadata.find(record.repository, path);
            if (row?.heldReason) p.held++;
            else p.imported++;
          } catch (err) {
            p.refused++;
            p.refusals.push({ path, reason: reasonOf(err, path) });
          }
        }
        if (abort.signal.aborted) return;
        c.done = i + 1;
        c.imported += p.imported;
        c.skipped += p.skipped;
        c.held += p.held;
        for (const r of p.refusals) refuse(r.path, r.reason);
        await checkpoint(record.id, c);
      }
      let exportId: string | null = null;
      if (record.target) exportId = (await deps.exports.start(record.repository, record.target, { kind: "system", id: record.actor }, listed(step, record))).id;
      await finish(record.id, "done", null, exportId);
      log.info({ importId: record.id, repository: record.repository, imported: c.imported, skipped: c.skipped, held: c.held, refused: c.refused, exportId }, "import ended");
    } catch (err) {
      const detail = err instanceof ServiceError && err.status < 500 ? err.message : reasonOf(err, record.repository);
      await finish(record.id, "failed", detail);
      log.warn({ importId: record.id, repository: record.repository, reason: detail }, "import stopped");
    } finally {
      clearInterval(beat);
    }
  };

  const launch = (record: ImportRecord) => {
    const abort = new AbortController();
    const done = run(record, abort)
      .catch((err: unknown) => log.error({ err, importId: record.id }, "could not record an import's progress"))
      .finally(() => running.delete(record.id));
    running.set(record.id, { abort, done });
  };

  /** Takes over one running import whose node stopped saying it is alive, if there is one (one node wins it). */
  const claim = async (): Promise<boolean> => {
    if (deps.readOnly) return false;
    const r = await pool.query<ImportRecord>(
      `update ${T} set heartbeat_at = now() where id = (
         select id from ${T} where state = 'running' and heartbeat_at < now() - make_interval(secs => $1) order by started_at limit 1 for update skip locked
       ) returning ${COLUMNS}`,
      [IMPORT_STALE_MS / 1000],
    );
    const row = r.rows[0];
    if (!row || running.has(row.id)) return false;
    log.info({ importId: row.id, repository: row.repository, done: row.done, packages: row.packages.length }, "import resumed (the node running it stopped)");
    launch(row);
    return true;
  };

  return {
    /** Checks the request, records the import and starts it; answers the record as it starts. */
    async start(repository: string, body: { packages: string[]; target?: string }, actor: Actor): Promise<ImportRecord> {
      const repo = await deps.metadata.repository(repository);
      if (!repo) throw notFound(`no repository named ${repository}`);
      if (!deps.isProxy(repository)) throw conflict(`${repository} is not a proxy repository: an import fetches from a proxy repository's upstream (create one of its source, then import into it)`);
      if (!deps.importOf(repository)) throw conflict(`repositories of format ${repo.format} have no imports yet`);
      const step = deps.importOf(repository)!;
      const packages = body.packages.map((p) => p.trim());
      if (packages.length === 0) throw invalid("packages", "packages must list at least one package");
      packages.forEach((p, i) => {
        if (p === "") throw invalid("packages", `packages[${i}] is empty`);
        try {
          step.spec(p);
        } catch (err) {
          throw err instanceof ServiceError ? invalid("packages", `packages[${i}]: ${err.message}`) : err;
        }
      });
      if (body.target !== undefined) {
        const to = await deps.metadata.repository(body.target);
        if (!to) throw invalid("target", `no repository named ${body.target} to import into: create it first (format ${repo.format})`);
        if (to.format !== repo.format) throw invalid("target", `${body.target} is a ${to.format} repository and ${repository} a ${repo.format} one: an import goes into a repository of the same format`);
        if (deps.isProxy(body.target) || body.target === repository) throw invalid("target", `${body.target} is a proxy repository: an import goes into a hosted one`);
        if (to.type === "group") throw invalid("target", `${body.target} is a group repository, which holds no files of its own: an import goes into a hosted one (one of its members)`);
      }
      if (deps.readOnly) throw forbidden(READ_ONLY);
      const r = await pool.query<ImportRecord>(
        `insert into ${T} (id, repository, format, target, state, actor, packages, heartbeat_at) values ($1, $2, $3, $4, 'running', $5, $6, now()) returning ${COLUMNS}`,
        [randomUUID(), repository, repo.format, body.target ?? null, actor.id || actor.kind, JSON.stringify(packages)],
      );
      const record = r.rows[0]!;
      launch(record);
      return record;
    },

    async show(repository: string, id: string): Promise<ImportRecord> {
      const found = /^[0-9a-f-]{36}$/i.test(id) ? await find(repository, id) : undefined;
      if (!found) throw notFound(`no import ${id} into repository ${repository}`);
      return found;
    },

    /** A repository's imports, newest first; `before`: the id of the last one of the previous page. */
    async list(repository: string, limit: number, before?: string): Promise<ImportRecord[]> {
      const r = before
        ? await pool.query<ImportRecord>(`select ${COLUMNS} from ${T} where repository = $1 and (started_at, id) < (select started_at, id from ${T} where id = $2::uuid) order by started_at desc, id desc limit $3`, [repository, before, limit])
        : await pool.query<ImportRecord>(`select ${COLUMNS} from ${T} where repository = $1 order by started_at desc, id desc limit $2`, [repository, limit]);
      return r.rows;
    },

    /** Resumes imports whose node stopped (at start, then every heartbeat): one node takes each. */
    resumeOrphans(): void {
      const tick = () => {
        claim().catch((err: unknown) => log.warn({ err }, "could not look for imports to resume"));
      };
      tick();
      claimer = setInterval(tick, heartbeatMs);
      claimer.unref();
    },

    /** On shutdown: running imports stop at their next file; another node (or this one, restarted) resumes them. */
    async stop(): Promise<void> {
      if (claimer) clearInterval(claimer);
      const ids = [...running.keys()];
      for (const r of running.values()) r.abort.abort();
      await Promise.all([...running.values()].map((r) => r.done));
      // Left for another node at once, not after the staleness wait.
      if (ids.length > 0) await pool.query(`update ${T} set heartbeat_at = '-infinity' where id = any($1::uuid[]) and state = 'running'`, [ids]).catch(() => {});
    },
  };
}
export type ProxyImport = ReturnType<typeof proxyImportFactory>;
