/** Where each upstream service answers (base URLs). */
export interface Upstreams {
  auth: string;
  artifacts: string;
  admin: string;
  walker: string;
  notifier: string;
}

/**
 * How a route's requests reach its upstream:
 *  - `pooled`: reply-from over a keep-alive undici pool per upstream service (any method, any body);
 *  - `downloads`: a GET goes through the download pool (download-pool.ts), anything else, an
 *    answer the pool cannot delimit, or an upstream that is not plain http goes `pooled`.
 */
export type Transport = "pooled" | "downloads";

export interface Route {
  /** The path prefix, forwarded unchanged (the upstream serves the same path). */
  prefix: string;
  upstream: keyof Upstreams;
  transport: Transport;
}

/**
 * Everything the gateway forwards. The router picks the longest prefix that matches, so
 * /api/credentials reaches auth and the rest of /api/ reaches admin whatever the row order;
 * the rows are registered in this order all the same. What a path requires is decided before
 * any of this, by the admission (domain/admission.ts).
 */
export const ROUTES: readonly Route[] = [
  { prefix: "/repository", upstream: "artifacts", transport: "downloads" },
  { prefix: "/api/repositories", upstream: "artifacts", transport: "pooled" },
  { prefix: "/api/credentials", upstream: "auth", transport: "pooled" },
  { prefix: "/api/principals", upstream: "auth", transport: "pooled" },
  { prefix: "/api/groups", upstream: "auth", transport: "pooled" },
  { prefix: "/api/walks", upstream: "walker", transport: "pooled" },
  { prefix: "/api/webhooks", upstream: "notifier", transport: "pooled" },
  { prefix: "/api", upstream: "admin", transport: "pooled" },
  { prefix: "/metrics", upstream: "admin", transport: "pooled" },
];
