import type { Logger } from "pino";
import type { DownloadCount, MetadataStore } from "../store/metadata-store.js";

export interface DownloadRecorderDeps {
  store: Pick<MetadataStore, "recordDownloads">;
  log: Pick<Logger, "warn">;
  flushEveryMs?: number;
  /** Distinct paths and principals kept in memory at most; past it the oldest counts are dropped. */
  maxPending?: number;
}

/**
 * Counts downloads (per file and principal) in memory and writes them in one statement per
 * interval, never a write per request. A failed batch is kept and merged into the next one.
 */
export function downloadRecorderFactory(deps: DownloadRecorderDeps) {
  const flushEveryMs = deps.flushEveryMs ?? 2000;
  const maxPending = deps.maxPending ?? 100_000;
  let pending = new Map<string, DownloadCount>();
  let timer: NodeJS.Timeout | undefined;
  let flushing: Promise<void> | undefined;

  const add = (into: Map<string, DownloadCount>, c: DownloadCount) => {
    const k = JSON.stringify([c.repository, c.path, c.principal]);
    const have = into.get(k);
    if (have) {
      have.count += c.count;
      if (c.at > have.at) have.at = c.at;
      if (c.first < have.first) have.first = c.first;
    } else {
      if (into.size >= maxPending) {
        const oldest = into.keys().next().value;
        if (oldest !== undefined) into.delete(oldest);
      }
      into.set(k, { ...c });
    }
  };

  const flush = async (): Promise<void> => {
    if (pending.size === 0) return;
    const batch = pending;
    pending = new Map();
    try {
      await deps.store.recordDownloads([...batch.values()]);
    } catch (err) {
      deps.log.warn({ err, paths: batch.size }, "could not record downloads; keeping them for the next batch");
      for (const c of batch.values()) add(pending, c);
    }
  };

  return {
    /** One download of a file by `principal` (kind:id; `anonymous:` for anyone). */
    record(repository: string, path: string, principal: string, at = new Date()): void {
      add(pending, { repository, path, principal, first: at, at, count: 1 });
    },
    flush,
    pending: () => pending.size,
    start() {
      timer = setInterval(() => {
        if (flushing) return;
        flushing = flush().finally(() => (flushing = undefined));
      }, flushEveryMs);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      await flushing;
      await flush();
    },
  };
}
export type DownloadRecorder = ReturnType<typeof downloadRecorderFactory>;
