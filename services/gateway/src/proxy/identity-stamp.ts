import { Pool, type Dispatcher } from "undici";
import { IDENTITY_BODY_HEADER, IDENTITY_HEADER, IDENTITY_HEADERS } from "@svc/contracts";
import { bodyDigest, identitySigner, type IdentitySigner } from "@svc/kit";

/**
 * How a forwarded request says who is asking. The client's own credentials and identity claims
 * are dropped; the admitted principal is stamped with the one function below, by each
 * transport where it writes the request, over the method and the exact path (with query) that
 * go on the wire, whatever reply-from and http-proxy made of the client's URL, the headers
 * that change the request's meaning, and the body (identity.ts).
 */
export type StampIdentity = IdentitySigner;

export function identityStamp(internalSecret: string): StampIdentity {
  return identitySigner(internalSecret);
}

/**
 * Never forwarded: the client's credentials and identity claims, and the hop-by-hop headers
 * that describe the client's connection to us, not ours to the upstream. Node answers
 * `Expect: 100-continue` itself (curl sends it with every upload over 1 MiB), and undici refuses
 * to send `expect`, `keep-alive` or `upgrade` at all: forwarded, they made an upload fail with 500.
 */
export const NOT_FORWARDED = ["service-repository-key", "authorization", "cookie", ...IDENTITY_HEADERS, "expect", "keep-alive", "upgrade", "proxy-connection", "te", "trailer"];

/** The same, for the console's rows: the session cookie is the console's own, forwarded to it alone. */
export const NOT_FORWARDED_TO_CONSOLE = NOT_FORWARDED.filter((h) => h !== "cookie");

/**
 * Readies reply-from's copy of the client's headers (changed in place): drops what is never
 * forwarded (`dropped`: NOT_FORWARDED, or NOT_FORWARDED_TO_CONSOLE) and names the admitted
 * principal, which SigningPool signs once the path is final. The client's identity headers are
 * gone by then, so only the gateway's own name is signed.
 */
export function claimIdentity(headers: Record<string, unknown>, principal: string, body?: string, dropped: readonly string[] = NOT_FORWARDED): void {
  for (let i = 0; i < dropped.length; i++) if (headers[dropped[i]!] !== undefined) delete headers[dropped[i]!];
  headers[IDENTITY_HEADER] = principal;
  // The digest of a body read whole before forwarding (api-body-limit.ts), for SigningPool.
  if (body !== undefined) headers[IDENTITY_BODY_HEADER] = body;
}

/**
 * The keep-alive connection pool to one upstream (the `api` transport, and HEAD on `downloads`).
 * It stamps each request where undici takes it, with the principal claimIdentity named. A
 * request without one goes unsigned, and the upstream refuses it; so does a streamed body
 * whose digest claimIdentity was not given (undici cannot send the trailer a stream needs:
 * upload-forwarder.ts).
 */
export class SigningPool extends Pool {
  constructor(
    origin: string,
    options: Pool.Options,
    private readonly stamp: StampIdentity,
  ) {
    super(origin, options);
  }

  override dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const headers = opts.headers as Record<string, unknown> | null | undefined;
    const principal = headers?.[IDENTITY_HEADER];
    if (typeof principal === "string") {
      const given = headers![IDENTITY_BODY_HEADER];
      const body = opts.body;
      const bound = typeof body === "string" || body instanceof Uint8Array ? bodyDigest(body) : typeof given === "string" ? given : undefined;
      this.stamp(headers!, opts.method, opts.path, principal, bound);
    }
    return super.dispatch(opts, handler);
  }
}
