/**
 * An export's record as the admin API answers it (`GET /api/repositories/<source>/exports/<id>`):
 * the shape the console and the tests read. (The `svc` CLI keeps its own copy: it is one bundled
 * file without dependencies.)
 */
export type ExportState = "running" | "done" | "failed" | "interrupted";

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
