import { CSRF_HEADER, SESSION_COOKIE } from "@svc/contracts";
import type { ApiResult } from "../pages/page-contract.js";

/** How long a page waits for one API call before it shows the failure. */
const CALL_TIMEOUT_MS = 30_000;

/**
 * The public API through the gateway, as the signed-in person: their own session cookie and
 * anti-forgery token go with every call, so the gateway's admission decides each right exactly
 * as for the person's browser. The cookie value stays in this call; it is never logged.
 */
export function gatewayApiFactory(deps: { gatewayUrl: string; fetch?: typeof fetch }) {
  const base = deps.gatewayUrl.replace(/\/+$/, "");
  const doFetch = deps.fetch ?? fetch;
  return (session: { cookie: string; csrf: string; from?: string }) =>
    async function api<T = any>(method: string, path: string, body?: unknown): Promise<ApiResult<T>> {
      if (!path.startsWith("/")) throw new Error(`an API path must start with "/": ${path}`);
      const headers: Record<string, string> = { cookie: `${SESSION_COOKIE}=${session.cookie}`, [CSRF_HEADER]: session.csrf, accept: "application/json" };
      // The person's address as the gateway saw it: believed by the gateway (the audit trail's
      // `address`) when this console's own address is in svc.trusted-proxies, as a proxy's is.
      if (session.from) headers["x-forwarded-for"] = session.from;
      if (body !== undefined) headers["content-type"] = "application/json";
      const res = await doFetch(`${base}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        redirect: "manual",
        signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
      });
      const text = await res.text();
      let parsed: unknown = text;
      if (/json/i.test(res.headers.get("content-type") ?? "") && text !== "") {
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = text;
        }
      }
      return { status: res.status, body: parsed as T, headers: Object.fromEntries(res.headers) };
    };
}
export type GatewayApi = ReturnType<typeof gatewayApiFactory>;
