/**
 * An export's record as the admin API answers it (`GET /api/repositories/<source>/exports/<id>`):
 * the shape the artifacts service answers and the console, the `svc` CLI (types only) and the tests read.
 */
export const EXPORT_STATES = ["running", "done", "failed", "interrupted"] as const;
export type ExportState = (typeof EXPORT_STATES)[number];

export interface ExportView {
  id: string;
  source: string;
  target: string;
  format: string;
  state: ExportState;
  /** Who started it (a principal id). */
  actor: string;
  total: number;
  copied: number;
  skipped: number;
  refused: number;
  /** The first refusals, each with its reason. */
  refusals: { path: string; reason: string }[];
  detail: string | null;
  started: string;
  ended: string | null;
}
