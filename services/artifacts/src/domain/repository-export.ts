import { randomUUID } from "node:crypto";
import type { FastifyBaseLogger } from "fastify";
import { ServiceError, conflict, forbidden, invalid, notFound, type Actor } from "@svc/contracts";
import { newReference } from "@svc/kit";
import type { ExportProgress, ExportRecord, ExportStore } from "../store/export-store.js";
import type { MetadataStore } from "../store/metadata-store.js";
import { READ_ONLY } from "./artifact-service.js";

/**
 * What a format's export step reports per item (a file, or an npm version): copied, skipped
 * (the target holds the same content at the same place already) or refused with a reason.
 */
export interface ExportTally {
  copied(path: string): void;
  skipped(path: string): void;
  refused(path: string, reason: string): void;
}

export interface ExportJob {
  source: string;
  target: string;
  actor: Actor;
  tally: ExportTally;
  /** Aborted when this process stops: a step returns at the next item (the export is then "interrupted"). */
  signal: AbortSignal;
  /** Only the items whose paths it accepts (an import's export: the packages it imported); absent: everything. */
  selects?: (path: string) => boolean;
}

/**
 * A format's copy step: copies everything `job.source` holds into `job.target` (same format),
 * through the same checks as that format's client uploads, counting each item in `job.tally`.
 * It throws only for what stops the whole export (read-only mode, an unexpected failure); a
 * refusal of one item is tallied and the export goes on. A format has one as its `export`
 * (formats/format.ts); a format without one cannot be exported (refused, naming it).
 */
export interface FormatExport {
  copy(job: ExportJob): Promise<void>;
}
export type FormatExports = Readonly<Partial<Record<string, FormatExport>>>;

export interface RepositoryExportDeps {
  metadata: Pick<MetadataStore, "repository">;
  store: ExportStore;
  formats: FormatExports;
  readOnly: boolean;
  log: FastifyBaseLogger;
  /** How often a running export's progress (its heartbeat) is written. */
  heartbeatMs?: number;
}

/** Refusals kept in the record (the count goes on): enough to act on, bounded in size. */
const REFUSALS_KEPT = 200;
const HEARTBEAT_MS = 2_000;
/** A running export whose heartbeat is older than this lost its process (killed, crashed). */
export const STALE_AFTER_MS = 15_000;
const LOST = "interrupted: the artifacts service that ran it stopped before it ended (a restart); export again to finish (what was copied is skipped)";

/**
 * Exports: a repository's contents copied into another of the same format, in the background,
 * with the record (progress, then the result) in Postgres. An export this process was running
 * when it stopped, or whose process died, says it was interrupted.
 */
export function repositoryExportFactory(deps: RepositoryExportDeps) {
  const { store, log } = deps;
  const running = new Map<string, { abort: AbortController; done: Promise<void> }>();
  const heartbeatMs = deps.heartbeatMs ?? HEARTBEAT_MS;

  const run = async (record: ExportRecord, step: FormatExport, actor: Actor, abort: AbortController, selects: ExportJob["selects"]) => {
    const p: ExportProgress = { total: record.total, copied: 0, skipped: 0, refused: 0, refusals: [] };
    const tally: ExportTally = {
      copied: () => void p.copied++,
      skipped: () => void p.skipped++,
      refused: (path, reason) => {
        p.refused++;
        if (p.refusals.length < REFUSALS_KEPT) p.refusals.push({ path, reason });
      },
    };
    const beat = setInterval(() => {
      store.progress(record.id, p).catch((err: unknown) => log.warn({ err, exportId: record.id }, "could not record an export's progress"));
    }, heartbeatMs);
    try {
      await step.copy({ source: record.source, target: record.target, actor, tally, signal: abort.signal, ...(selects ? { selects } : {}) });
      p.total = Math.max(p.total, p.copied + p.skipped + p.refused);
      if (abort.signal.aborted) await store.finish(record.id, "interrupted", p, LOST);
      else await store.finish(record.id, "done", p, null);
      log.info({ exportId: record.id, source: record.source, target: record.target, copied: p.copied, skipped: p.skipped, refused: p.refused }, "export ended");
    } catch (err) {
      if (err instanceof ServiceError && err.status < 500) {
        await store.finish(record.id, "failed", p, err.message);
        log.warn({ exportId: record.id, source: record.source, target: record.target, reason: err.message }, "export stopped");
      } else {
        const reference = newReference();
        log.error({ err, reference, exportId: record.id }, `Unexpected failure ${reference} while exporting ${record.source} to ${record.target}`);
        await store.finish(record.id, "failed", p, `the export failed unexpectedly. Reference: ${reference}`);
      }
    } finally {
      clearInterval(beat);
    }
  };

  return {
    /** Checks the request, records the export and starts it; answers the record as it starts. */
    async start(source: string, target: string, actor: Actor, selects?: ExportJob["selects"]): Promise<ExportRecord> {
      const from = await deps.metadata.repository(source);
      if (!from) throw notFound(`no repository named ${source}`);
      if (target === source) throw invalid("target", `the target must be another repository than ${source}`);
      const to = await deps.metadata.repository(target);
      if (!to) throw invalid("target", `no repository named ${target} to export into: create it first (same format, ${from.format})`);
      // A group holds no files of its own (they are its members').
      if (from.type === "group") throw conflict(`${source} is a group repository: it holds no files of its own; export from its members (${from.members?.join(", ")})`);
      if (to.type === "group") throw invalid("target", `${target} is a group repository, which holds no files of its own: export into one of its hosted members`);
      if (to.format !== from.format) throw conflict(`${source} is a ${from.format} repository and ${target} a ${to.format} one: an export copies into a repository of the same format`);
      const step = deps.formats[from.format];
      if (!step) throw conflict(`repositories of format ${from.format} cannot be exported yet (no export step for ${from.format})`);
      if (deps.readOnly) throw forbidden(READ_ONLY);
      const record = await store.create({ id: randomUUID(), source, target, format: from.format, actor: actor.id || actor.kind, total: from.artifacts });
      const abort = new AbortController();
      const done = run(record, step, actor, abort, selects)
        .catch((err: unknown) => log.error({ err, exportId: record.id }, "could not record an export's end"))
        .finally(() => running.delete(record.id));
      running.set(record.id, { abort, done });
      return record;
    },

    /** One export's record; a running one whose process stopped answering is reported (and recorded) interrupted. */
    async show(source: string, id: string): Promise<ExportRecord> {
      const found = /^[0-9a-f-]{36}$/i.test(id) ? await store.find(source, id) : undefined;
      if (!found) throw notFound(`no export ${id} of repository ${source}`);
      if (found.state === "running" && !running.has(id) && Date.now() - found.heartbeat.getTime() > STALE_AFTER_MS) {
        await store.markInterrupted(STALE_AFTER_MS, LOST);
        return (await store.find(source, id))!;
      }
      return found;
    },

    list: (source: string, limit: number, before?: string) => store.list(source, limit, before),

    /** At start: exports whose process died (heartbeat stopped) are recorded interrupted. */
    async sweep(): Promise<void> {
      const n = await store.markInterrupted(STALE_AFTER_MS, LOST);
      if (n > 0) log.warn({ exports: n }, "exports interrupted by a restart recorded as such");
    },

    /** On shutdown: running exports stop at their next item and are recorded interrupted. */
    async stop(): Promise<void> {
      for (const r of running.values()) r.abort.abort();
      await Promise.all([...running.values()].map((r) => r.done));
    },
  };
}
export type RepositoryExport = ReturnType<typeof repositoryExportFactory>;
