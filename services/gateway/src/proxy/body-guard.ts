import type { FastifyReply, FastifyRequest } from "fastify";
import { ServiceError, problem } from "@svc/contracts";
import { clientAddress, hasRequestBody, sendProblem, surfaceOf, watchBodyIdle, type AddressMatcher } from "@svc/kit";

export interface BodyGuardOptions {
  /** A body that sends nothing for this long is cut (svc.upload-idle-timeout); 0: never. */
  idleMs: number;
  /** Most bodies one caller may be sending at once (svc.upload-concurrency); 0: no cap. */
  perCaller: number;
  trustedProxies: AddressMatcher;
}

/** How long a caller over the cap is asked to wait: a body under way may end any moment. */
const RETRY_AFTER = "1";

/**
 * What keeps request bodies from holding the gateway's upstream connections: at most
 * `perCaller` artifact uploads under way per caller (a key; keyless callers by client address),
 * and a body (any) that stops arriving is cut with 408. A body counts from admission until it has all
 * arrived upstream (or the exchange ends); waiting for the answer does not count.
 * Per gateway process, not cluster-wide.
 */
export function bodyGuardFactory(opts: BodyGuardOptions) {
  const underWay = new Map<string, number>();
  const callerOf = (request: FastifyRequest) =>
    request.forwardedPrincipal.startsWith("key:") ? request.forwardedPrincipal : `address:${clientAddress(request.socket.remoteAddress, request.headers["x-forwarded-for"], opts.trustedProxies)}`;

  const cut = (request: FastifyRequest, reply: FastifyReply) => {
    request.log.warn({ method: request.method, url: request.url, principal: request.forwardedPrincipal, idleMs: opts.idleMs }, "cut a request body that stopped arriving (svc.upload-idle-timeout)");
    if (!reply.sent) {
      sendProblem(reply, surfaceOf(request.url, request.headers.accept, request.headers["user-agent"]), problem("request_timeout", `the request body sent nothing for ${opts.idleMs} ms (svc.upload-idle-timeout): nothing was stored`), { connection: "close" });
    }
    // The upstream sees its body fail and keeps what it had; the answer goes out first.
    if (reply.raw.writableFinished) request.raw.destroy();
    else reply.raw.once("finish", () => request.raw.destroy());
  };

  return {
    /** An onRequest hook, after admission (it needs `forwardedPrincipal`). */
    guard(request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void {
      if (!hasRequestBody(request)) return done();
      // The cap is on artifact and build cache uploads (what can be large and slow); administration bodies are
      // small, capped at 1 MiB, and a script may send many at once (20 members added together).
      if (opts.perCaller > 0 && (request.target?.kind === "artifact" || request.target?.kind === "cache")) {
        const caller = callerOf(request);
        const n = underWay.get(caller) ?? 0;
        if (n >= opts.perCaller) {
          return done(
            new ServiceError("rate_limited", `this caller already has ${n} request bodies under way at this gateway (svc.upload-concurrency): retry once one has finished`, {
              headers: { "retry-after": RETRY_AFTER },
            }),
          );
        }
        underWay.set(caller, n + 1);
        let counted = true;
        const release = () => {
          if (!counted) return;
          counted = false;
          const left = (underWay.get(caller) ?? 1) - 1;
          if (left > 0) underWay.set(caller, left);
          else underWay.delete(caller);
        };
        request.raw.once("end", release);
        request.raw.once("close", release);
        reply.raw.once("close", release);
      }
      watchBodyIdle(request, reply, opts.idleMs, () => cut(request, reply));
      done();
    },
    /** Bodies under way per caller (for tests and metrics). */
    underWay: () => new Map(underWay),
  };
}
