import { invalid } from "@svc/contracts";
import { LEVEL_VALUES, type LogQuery, type LogReply } from "@svc/kit";

export interface LogPage {
  entries: LogReply["entries"];
  /** Pass back as `after` to get only newer entries. */
  next: string;
}

/** The tailing cursor: the last sequence number seen per node, as base64url JSON. */
export function decodeCursor(text: string | undefined): Record<string, number> | undefined {
  if (!text) return undefined;
  try {
    const v = JSON.parse(Buffer.from(text, "base64url").toString("utf8")) as unknown;
    if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error();
    for (const n of Object.values(v)) if (!Number.isInteger(n)) throw new Error();
    return v as Record<string, number>;
  } catch {
    throw invalid("after", "after must be a cursor returned by a previous call (the `next` value)");
  }
}

export const encodeCursor = (c: Record<string, number>) => Buffer.from(JSON.stringify(c)).toString("base64url");

/** A service name as processes announce it: the catalog's (`gateway`, `auth`, …) or any later one. */
const SERVICE = /^[a-z][a-z0-9-]{0,39}$/;

function readServices(text: string | undefined): string[] | undefined {
  if (text === undefined || text.trim() === "") return undefined;
  const names = [...new Set(text.split(",").map((s) => s.trim()).filter((s) => s !== ""))];
  const bad = names.find((n) => !SERVICE.test(n));
  if (bad !== undefined || names.length > 20) throw invalid("service", `service must be a service name such as gateway, auth, artifacts, admin, walker or notifier, or several separated by commas`);
  return names;
}

export function readLogQuery(q: { level?: string; q?: string; limit?: string; after?: string; category?: string; service?: string }): LogQuery & { limit: number } {
  let category: LogQuery["category"];
  if (q.category !== undefined && q.category !== "") {
    if (q.category !== "access" && q.category !== "other") throw invalid("category", "category must be access (the gateway's line per request) or other (everything else)");
    category = q.category;
  }
  let level: number | undefined;
  if (q.level !== undefined && q.level !== "") {
    level = LEVEL_VALUES[q.level.toUpperCase()];
    if (level === undefined) throw invalid("level", "level must be one of TRACE, DEBUG, INFO, WARN, ERROR, FATAL");
  }
  let limit = 100;
  if (q.limit !== undefined) {
    if (!/^\d+$/.test(q.limit) || Number(q.limit) < 1 || Number(q.limit) > 1000) throw invalid("limit", "limit must be a whole number from 1 to 1000");
    limit = Number(q.limit);
  }
  return { level, text: q.q || undefined, category, services: readServices(q.service), limit, after: decodeCursor(q.after) };
}

/**
 * Merges the nodes' entries in time order (ties: node name, then sequence). Without a cursor
 * the newest `limit` entries; with one, the oldest `limit` entries after it. The next cursor
 * carries, for each node, the last sequence returned (or the one given).
 */
export function mergeLogs(replies: LogReply[], q: LogQuery & { limit: number }): LogPage {
  const all = replies.flatMap((r) => r.entries);
  all.sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : a.node < b.node ? -1 : a.node > b.node ? 1 : a.seq - b.seq));
  const chosen = q.after ? all.slice(0, q.limit) : all.slice(-q.limit);
  const cursor: Record<string, number> = { ...q.after };
  // Without a cursor, what was older than the newest page is skipped on purpose: tailing
  // continues after everything each node had. With one, only what was returned moves it on.
  for (const e of q.after ? chosen : all) cursor[e.node] = Math.max(cursor[e.node] ?? 0, e.seq);
  return { entries: chosen, next: encodeCursor(cursor) };
}
