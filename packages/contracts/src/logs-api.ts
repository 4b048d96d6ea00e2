/**
 * A log entry as each process keeps it in its in-memory ring, and as the logs API answers it
 * (`GET /api/logs`: `{ entries, next }`, each entry with the node that logged it). kit's logger
 * keeps them; the console and the `svc` CLI (types only) read them.
 */
export interface LogEntry {
  seq: number;
  time: string;
  level: string;
  service: string;
  msg: string;
  [field: string]: unknown;
}

/** An entry of `GET /api/logs`: which node logged it, too. */
export type NodeLogEntry = LogEntry & { node: string };

/** `GET /api/logs`; `next` is the cursor to ask for what came after. */
export interface LogsPage {
  entries: NodeLogEntry[];
  next: string;
}
