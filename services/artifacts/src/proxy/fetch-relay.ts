import { Agent, request, type IncomingMessage } from "node:http";
import { networkInterfaces } from "node:os";
import type { Readable } from "node:stream";
import { sql, type Kysely, type Migration } from "kysely";
import type pg from "pg";
import { encodePrincipal } from "@svc/contracts";
import { identitySigner } from "@svc/kit";
import { SCHEMA } from "../store/schema.js";

/**
 * A proxied file being fetched on one artifacts node, streamed to the requests for it on the
 * other nodes (docs/administration/repositories.md, "Answered as the bytes arrive"): the node
 * holding a file's fetch lock records, in `proxy_fetch_streams`, the fetch's id and its own
 * address; a node waiting for that lock reads it and asks the holder's internal route
 * `GET /internal/proxy-fetches/<id>` (signed with the internal secret as a system principal, as
 * every internal call is; the gateway forwards no `/internal/` path) for the file's bytes,
 * which the holder sends from its spool as they arrive, as it does to its own waiters.
 */
export const PROXY_FETCH_ROUTE = "/internal/proxy-fetches/:id";
export const proxyFetchPath = (id: string) => `/internal/proxy-fetches/${encodeURIComponent(id)}`;

/** How long a relay may go without a byte from the holder (its upstream stalling, its store committing) before it is taken as broken. */
const RELAY_IDLE_MS = 120_000;

export const fetchStreamMigrations: Record<string, Migration> = {
  "0026_fetch_streams": {
    async up(db: Kysely<unknown>) {
      // The proxy fetches under way that other nodes may stream from (proxy/fetch-relay.ts), one
      // per file: the holder's row, replaced by the next fetch of the file; `failure`: why it
      // was refused or broke off (its waiters on other nodes are broken off with it).
      await db.schema
        .withSchema(SCHEMA)
        .createTable("proxy_fetch_streams")
        .addColumn("repository", "text", (c) => c.notNull().references(`${SCHEMA}.repositories.name`).onDelete("cascade"))
        .addColumn("path", "text", (c) => c.notNull())
        .addColumn("fetch_id", "text", (c) => c.notNull().unique())
        .addColumn("node_url", "text", (c) => c.notNull())
        .addColumn("failure", "text")
        .addColumn("started_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addPrimaryKeyConstraint("proxy_fetch_streams_pk", ["repository", "path"])
        .execute();
    },
  },
};

export interface FetchStream {
  id: string;
  nodeUrl: string;
  /** Why the fetch failed, once it has; null while it runs. */
  failure: string | null;
}

const T = `${SCHEMA}.proxy_fetch_streams`;

/** The rows of `proxy_fetch_streams`: written by a fetch's holder, read by its waiters on other nodes. */
export function fetchStreamsStore(pool: pg.Pool) {
  const row = (r: { fetch_id: string; node_url: string; failure: string | null } | undefined): FetchStream | undefined => r && { id: r.fetch_id, nodeUrl: r.node_url, failure: r.failure };
  return {
    /** The holder's fetch of `path`, now streaming from `nodeUrl`; a row left by an older fetch of it is replaced. */
    async started(repository: string, path: string, id: string, nodeUrl: string): Promise<void> {
      await pool.query(
        `insert into ${T} (repository, path, fetch_id, node_url) values ($1, $2, $3, $4)
         on conflict (repository, path) do update set fetch_id = excluded.fetch_id, node_url = excluded.node_url, failure = null, started_at = now()`,
        [repository, path, id, nodeUrl],
      );
    },
    /** The fetch stored its file: nothing left to stream. */
    async stored(id: string): Promise<void> {
      await pool.query(`delete from ${T} where fetch_id = $1`, [id]);
    },
    /** The fetch failed: kept with why (its waiters elsewhere read it), until the next fetch of the file replaces it. */
    async failed(id: string, failure: string): Promise<void> {
      await pool.query(`update ${T} set failure = $2 where fetch_id = $1`, [id, failure]);
    },
    async of(repository: string, path: string): Promise<FetchStream | undefined> {
      return row((await pool.query(`select fetch_id, node_url, failure from ${T} where repository = $1 and path = $2`, [repository, path])).rows[0]);
    },
    async byId(id: string): Promise<FetchStream | undefined> {
      return row((await pool.query(`select fetch_id, node_url, failure from ${T} where fetch_id = $1`, [id])).rows[0]);
    },
  };
}
export type FetchStreams = ReturnType<typeof fetchStreamsStore>;

/**
 * This node's address as the other artifacts nodes reach it: `svc.artifacts.node-url` when set;
 * else `svc.host` and `svc.port`, with this machine's first address that is not a loopback one
 * in place of a wildcard `svc.host` (`0.0.0.0`, `::`: a Kubernetes pod's own address).
 */
export function nodeUrlOf(config: { artifactsNodeUrl: string; host: string; port: number }): string {
  if (config.artifactsNodeUrl) return config.artifactsNodeUrl.replace(/\/+$/, "");
  let host = config.host;
  if (host === "0.0.0.0" || host === "::" || host === "") {
    const found = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && !a.internal && a.family === "IPv4");
    host = found?.address ?? "127.0.0.1";
  }
  return `http://${host.includes(":") ? `[${host}]` : host}:${config.port}`;
}

/** What a relay answered: the file's bytes as the holder sends them, and its length when known. */
export interface Relayed {
  body: Readable;
  size: number | undefined;
}

/**
 * Asks the node at `nodeUrl` for its fetch `id`'s bytes, signed as the system principal
 * `artifacts`; undefined when it does not answer 200 (the fetch is over, or the node is gone).
 */
export function fetchRelayClient(o: { internalSecret: string; tenant: string }) {
  const sign = identitySigner(o.internalSecret);
  const principal = encodePrincipal({ kind: "system", tenant: o.tenant, id: "artifacts" });
  const agent = new Agent({ keepAlive: true });
  return async (nodeUrl: string, id: string): Promise<Relayed | undefined> => {
    const path = proxyFetchPath(id);
    const headers: Record<string, string> = {};
    sign(headers, "GET", path, principal);
    const res = await new Promise<IncomingMessage | undefined>((resolve) => {
      const req = request(`${nodeUrl}${path}`, { method: "GET", headers, agent }, resolve);
      // No answer in time, or bytes stalled past the idle time: the relay is broken (its reader sees the error).
      req.setTimeout(RELAY_IDLE_MS, () => req.destroy(new Error(`no bytes from ${nodeUrl} within ${RELAY_IDLE_MS} ms`)));
      req.on("error", () => resolve(undefined));
      req.end();
    });
    if (!res) return undefined;
    if (res.statusCode !== 200) {
      res.resume();
      return undefined;
    }
    const size = Number(res.headers["content-length"]);
    return { body: res, size: Number.isSafeInteger(size) && size >= 0 ? size : undefined };
  };
}
export type FetchRelayClient = ReturnType<typeof fetchRelayClient>;
