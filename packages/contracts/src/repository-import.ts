/**
 * An import's record as the admin API answers it (`GET /api/repositories/<proxy>/imports/<id>`):
 * the shape the artifacts service answers and the console reads.
 */
export const IMPORT_STATES = ["running", "done", "failed"] as const;
export type ImportState = (typeof IMPORT_STATES)[number];

export interface ImportView {
  id: string;
  /** The proxy repository fetched into. */
  repository: string;
  format: string;
  /** The hosted repository it is exported into once fetched, or null. */
  target: string | null;
  state: ImportState;
  /** Who started it (a principal id). */
  actor: string;
  /** Packages listed, and how many are done. */
  packages: number;
  done: number;
  imported: number;
  skipped: number;
  held: number;
  refused: number;
  /** The first refusals, each with its reason. */
  refusals: { path: string; reason: string }[];
  /** The export into `target`, once started. */
  export: string | null;
  detail: string | null;
  started: string;
  ended: string | null;
}
