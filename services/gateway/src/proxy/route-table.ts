/** Where each upstream service answers (base URLs). */
export interface Upstreams {
  auth: string;
  artifacts: string;
  admin: string;
  walker: string;
  notifier: string;
}

/**
 * How a route's requests reach its upstream. Each transport has its own connections to each
 * upstream, so no kind of traffic can take the connections another needs: stalled uploads
 * cannot hold up downloads or the API, nor a burst of downloads an upload.
 *  - `downloads`: a GET goes through the download pool (download-pool.ts); a HEAD, an answer
 *    the pool cannot delimit, or an upstream that is not plain http goes through this
 *    transport's own undici pool;
 *  - `uploads`: writes to the store (bodies that may take minutes), an undici pool of their own;
 *  - `api`: everything else, an undici pool per upstream service.
 */
export type Transport = "downloads" | "uploads" | "api";

export interface Route {
  /** The path prefix, forwarded unchanged (the upstream serves the same path). */
  prefix: string;
  upstream: keyof Upstreams;
  transport: Transport;
  /** The methods this row forwards; unset: every method the proxy knows. */
  methods?: readonly string[];
}

/**
 * Everything the gateway forwards. The router picks the longest prefix that matches, so
 * /api/credentials reaches auth and the rest of /api/ reaches admin whatever the row order;
 * the rows are registered in this order all the same. What a path requires is decided before
 * any of this, by the admission (domain/admission.ts).
 */
export const ROUTES: readonly Route[] = [
  { prefix: "/repository", upstream: "artifacts", transport: "downloads", methods: ["GET", "HEAD"] },
  { prefix: "/repository", upstream: "artifacts", transport: "uploads", methods: ["PUT", "DELETE", "POST", "PATCH", "OPTIONS"] },
  { prefix: "/api/repositories", upstream: "artifacts", transport: "api" },
  { prefix: "/api/credentials", upstream: "auth", transport: "api" },
  { prefix: "/api/principals", upstream: "auth", transport: "api" },
  { prefix: "/api/groups", upstream: "auth", transport: "api" },
  { prefix: "/api/walks", upstream: "walker", transport: "api" },
  { prefix: "/api/webhooks", upstream: "notifier", transport: "api" },
  { prefix: "/api", upstream: "admin", transport: "api" },
  { prefix: "/metrics", upstream: "admin", transport: "api" },
];
