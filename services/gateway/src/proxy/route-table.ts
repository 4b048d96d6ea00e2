/** Where each upstream service answers (base URLs). */
export interface Upstreams {
  auth: string;
  artifacts: string;
  admin: string;
  walker: string;
  notifier: string;
  console: string;
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
  /** The path prefix, forwarded unchanged (the upstream serves the same path) unless `rewrite` says otherwise. */
  prefix: string;
  /** The prefix the upstream serves instead (an alias); unset: `prefix`. */
  rewrite?: string;
  upstream: keyof Upstreams;
  transport: Transport;
  /** The methods this row forwards; unset: every method the proxy knows. */
  methods?: readonly string[];
  /** Forward the client's Cookie header (the console's session cookie); every other row drops it. */
  cookie?: true;
  /** Its answers are uploaded content, served inert whatever their status (inert-content.ts). */
  inert?: true;
}

/**
 * Everything the gateway forwards. The router picks the longest prefix that matches, so
 * /api/credentials reaches auth and the rest of /api/ reaches admin whatever the row order;
 * the rows are registered in this order all the same. What a path requires is decided before
 * any of this, by the admission (domain/admission.ts).
 */
export const ROUTES: readonly Route[] = [
  { prefix: "/repository", upstream: "artifacts", transport: "downloads", methods: ["GET", "HEAD"], inert: true },
  { prefix: "/repository", upstream: "artifacts", transport: "uploads", methods: ["PUT", "DELETE", "POST", "PATCH", "OPTIONS"], inert: true },
  // Build caches (Gradle's and Bazel's HTTP caches): entries are uploaded content, served inert like artifacts.
  { prefix: "/cache", upstream: "artifacts", transport: "downloads", methods: ["GET", "HEAD"], inert: true },
  { prefix: "/cache", upstream: "artifacts", transport: "uploads", methods: ["PUT", "DELETE"], inert: true },
  // Container images (OCI distribution): `/v2/<repository>/<name…>/…` (formats/oci in the artifacts service).
  { prefix: "/v2", upstream: "artifacts", transport: "downloads", methods: ["GET", "HEAD"], inert: true },
  { prefix: "/v2", upstream: "artifacts", transport: "uploads", methods: ["PUT", "DELETE", "POST", "PATCH"], inert: true },
  { prefix: "/api/repositories", upstream: "artifacts", transport: "api" },
  { prefix: "/api/build-caches", upstream: "artifacts", transport: "api" },
  // `POST /api/caches {"name","maxBytes"}` makes a build cache, and PATCH/DELETE /api/caches/<name>
  // change one, as /api/build-caches does. GET /api/caches and POST /api/caches/clear are the
  // gateway's own (routes/cache-routes.ts: this node's read caches, with the build caches listed beside).
  { prefix: "/api/caches", rewrite: "/api/build-caches", upstream: "artifacts", transport: "api", methods: ["POST", "PATCH", "DELETE"] },
  { prefix: "/api/formats", upstream: "artifacts", transport: "api" },
  // Search of every repository's files by name (the console's Repositories page).
  { prefix: "/api/search", upstream: "artifacts", transport: "api" },
  // The screening gate's administration (the artifacts service owns advisories, holds, findings and the refusal log).
  { prefix: "/api/deny-list", upstream: "artifacts", transport: "api" },
  { prefix: "/api/held", upstream: "artifacts", transport: "api" },
  { prefix: "/api/findings", upstream: "artifacts", transport: "api" },
  { prefix: "/api/refusals", upstream: "artifacts", transport: "api" },
  { prefix: "/api/advisories", upstream: "artifacts", transport: "api" },
  { prefix: "/api/gate", upstream: "artifacts", transport: "api" },
  { prefix: "/api/credentials", upstream: "auth", transport: "api" },
  { prefix: "/api/me", upstream: "auth", transport: "api" },
  // Command-line sign-ins through the console (svc login, npm login): started and polled keyless.
  { prefix: "/api/logins", upstream: "auth", transport: "api" },
  { prefix: "/api/principals", upstream: "auth", transport: "api" },
  { prefix: "/api/groups", upstream: "auth", transport: "api" },
  { prefix: "/api/walks", upstream: "walker", transport: "api" },
  { prefix: "/api/webhooks", upstream: "notifier", transport: "api" },
  { prefix: "/api", upstream: "admin", transport: "api" },
  { prefix: "/metrics", upstream: "admin", transport: "api" },
  // The console: its pages, its sign-in and sign-out, and its own files. `GET /` for a browser
  // is the console's too (proxy-routes.ts: it depends on Accept, not on the path alone).
  { prefix: "/ui", upstream: "console", transport: "api", cookie: true },
  { prefix: "/login", upstream: "console", transport: "api", cookie: true },
  { prefix: "/logout", upstream: "console", transport: "api", cookie: true },
  // The console's icon, where browsers ask for it whatever page they are on; no cookie needed.
  { prefix: "/favicon.ico", upstream: "console", transport: "api" },
];

/** Where `GET /` goes when the client asks for HTML. */
export const CONSOLE_HOME: Route = { prefix: "/", upstream: "console", transport: "api", cookie: true };
