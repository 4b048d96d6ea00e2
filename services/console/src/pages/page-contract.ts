import type { RightName } from "../domain/person-rights.js";
import type { Html } from "./html.js";

/**
 * What a console page is, and what the console's core gives it. The core (services/console/src,
 * outside pages/) owns sign-in, sessions, the layout (header with the signed-in id and the
 * advisory count, the navigation), the anti-forgery check, and the error, 403 and no-access
 * pages; a page only reads and changes things through `ctx.api`, which calls the public API
 * through the gateway as the signed-in person, so the gateway's admission decides every right.
 */

export interface ApiResult<T = any> {
  status: number;
  body: T;
  headers: Record<string, string>;
}

export interface PageContext {
  /** The signed-in person (`oidc/<sub>`, `oauth/<id>`, `dev/<name>`) and the deployment's tenant. */
  person: { id: string; tenant: string };
  /**
   * Calls the API through the gateway as the signed-in person (`path` with its query, e.g.
   * `/api/credentials?limit=50`). Never throws for an HTTP status: the caller looks at
   * `status`. `expectOk` turns a refusal into the page the core renders for it.
   */
  api<T = any>(method: string, path: string, body?: unknown): Promise<ApiResult<T>>;
  /** The part of the path after `/ui/<slug>` (e.g. `/default` for `/ui/repositories/default`), "" for none. */
  subpath: string;
  /** The URL's query parameters (first value of each). */
  query: Record<string, string>;
  /** A POST's url-encoded form fields (first value of each); {} on GET. Already checked against forgery. */
  form: Record<string, string>;
  /** The session's anti-forgery token: every form carries it as the `_csrf` field (see `csrfField`). */
  csrf: string;
  /**
   * Whether the person holds `right` now (over `*`, or anywhere in `repository`), read from
   * `GET /api/me` for this page: a page offers a form only to a person who may use it. The
   * gateway still decides every request.
   */
  may(right: RightName, repository?: string): boolean;
  /** Settings this console runs with that pages need. */
  options: { deployEnabled: boolean; publicBaseUrl: string };
}

/** What a page answers. */
export type PageOutcome =
  /** `main`: the page's content; the core wraps it in the layout with `title`. `notice`: a message shown above it (e.g. "Key issued"). */
  | {
      kind: "html";
      title: string;
      main: Html;
      notice?: string;
      /**
       * The page's own scripts, file names in services/console/src/pages/assets/ (served at
       * `/ui/assets/pages/<file>`; the Content-Security-Policy allows only the console's own
       * files, so no inline script or handler). A script finds the anti-forgery token in
       * `<meta name="csrf-token">`.
       */
      scripts?: string[];
    }
  /** After a successful POST (post/redirect/get); `notice` is shown once on the next page. */
  | { kind: "redirect"; location: string; notice?: string }
  /** For the page's own script (e.g. the Logs page following new entries), same-origin GET only. */
  | { kind: "json"; body: unknown };

export interface ConsolePage {
  /** Served at `/ui/<slug>` and `/ui/<slug>/...`. */
  slug: string;
  /** The navigation label, as the spec names the page. */
  nav: string;
  /** The right the page needs, named on its 403 page (the gateway's answer decides, this only describes). */
  needs: string;
  get(ctx: PageContext): Promise<PageOutcome>;
  /**
   * Form posts to `/ui/<slug>/...`, by the form's `_action` field. The core has checked the
   * anti-forgery token before calling.
   */
  actions?: Record<string, (ctx: PageContext) => Promise<PageOutcome>>;
}

/**
 * An API answer that is a refusal (4xx) or a failure (5xx), thrown by `expectOk` and rendered
 * by the core: 401 -> sign-in, 403 -> the 403 page with the server's reason (which names the
 * missing right) and the page's `needs`, 404 -> not found, 5xx -> the error page with the
 * server's reference when it gave one.
 */
export class ApiRefusal extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly reference?: string,
  ) {
    super(detail);
  }
}

/** The body of a 2xx answer, or an ApiRefusal with the problem document's reason. */
export function expectOk<T>(result: ApiResult<T>): T {
  if (result.status >= 200 && result.status < 300) return result.body;
  const b = (result.body ?? {}) as { title?: string; detail?: string; reference?: string };
  throw new ApiRefusal(result.status, b.detail ?? b.title ?? `HTTP ${result.status}`, b.reference);
}
