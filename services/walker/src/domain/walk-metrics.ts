import { Counter, Gauge } from "prom-client";
import type { ServiceMetrics } from "@svc/kit";

/** A walk in progress as meters: running, index rows, bytes and blobs seen so far, and per-job counts. */
export function walkMetricsFactory(m: ServiceMetrics) {
  const registers = [m.registry];
  const running = new Gauge({ name: "svc_walk_running", help: "1 while this process runs the walk", labelNames: ["walk"] as const, registers });
  const entries = new Gauge({ name: "svc_walk_entries", help: "Index rows (paths) the current or last run of the walk has seen", labelNames: ["walk"] as const, registers });
  const bytes = new Gauge({ name: "svc_walk_bytes", help: "Bytes the index rows the current or last run of the walk has seen hold", labelNames: ["walk"] as const, registers });
  const blobs = new Gauge({ name: "svc_walk_blobs", help: "Blobs of the store's listing the current or last run of the walk has seen", labelNames: ["walk"] as const, registers });
  const jobCounts = new Gauge({ name: "svc_walk_job_count", help: "What each job of the current or last run has counted so far", labelNames: ["walk", "job", "count"] as const, registers });
  const started = new Gauge({ name: "svc_walk_started_timestamp_seconds", help: "When the current or last run of the walk started", labelNames: ["walk"] as const, registers });
  const runs = new Counter({ name: "svc_walk_runs_total", help: "Walk runs ended, by outcome", labelNames: ["walk", "outcome"] as const, registers });
  return {
    start(walk: string) {
      running.set({ walk }, 1);
      entries.set({ walk }, 0);
      bytes.set({ walk }, 0);
      blobs.set({ walk }, 0);
      started.set({ walk }, Date.now() / 1000);
    },
    progress(walk: string, p: { entries: number; bytes: number; blobs: number; counts: Record<string, Record<string, number>> }) {
      entries.set({ walk }, p.entries);
      bytes.set({ walk }, p.bytes);
      blobs.set({ walk }, p.blobs);
      for (const [job, c] of Object.entries(p.counts)) for (const [count, v] of Object.entries(c)) jobCounts.set({ walk, job, count }, v);
    },
    end(walk: string, outcome: string) {
      running.set({ walk }, 0);
      runs.inc({ walk, outcome });
    },
  };
}
export type WalkMetrics = ReturnType<typeof walkMetricsFactory>;
