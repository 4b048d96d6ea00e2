import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import type { FastifyReply, FastifyRequest } from "fastify";

/**
 * Request bodies as the gateway and the artifacts service take them: artifact bodies are opaque
 * bytes whatever their Content-Type, and a body that stops arriving is cut.
 */

const DECLARED = Symbol("declared content type");
type WithDeclared = { [DECLARED]?: string };

/**
 * Fastify answers 415 to a Content-Type it cannot parse before any content-type parser is asked,
 * and picks a parser (text/plain: read whole, decoded, capped) by it. An artifact body is
 * opaque, so its header is set aside in an onRequest hook, before fastify reads it, and the
 * body goes to the route's catch-all parser; declaredContentType() gives it back.
 */
export function setContentTypeAside(request: FastifyRequest): void {
  const headers = request.raw.headers;
  const declared = headers["content-type"];
  if (declared === undefined) return;
  (request.raw as WithDeclared)[DECLARED] = declared;
  delete headers["content-type"];
}

/** The Content-Type the client sent, set aside or not. */
export function declaredContentType(request: { raw: { headers: IncomingHttpHeaders } }): string | undefined {
  return (request.raw as WithDeclared)[DECLARED] ?? request.raw.headers["content-type"];
}

/** Whether a request carries a body at all (a length above 0, or chunked). */
export function hasRequestBody(request: FastifyRequest): boolean {
  const h = request.raw.headers;
  return h["transfer-encoding"] !== undefined || (h["content-length"] !== undefined && h["content-length"] !== "0");
}

/**
 * Calls `stalled` when the request body sends nothing for `ms` (0: never) before it has all
 * arrived. The socket's own idle timer does the watching (no work per chunk), armed through
 * the response so Node never closes the connection by itself; disarmed once the body is in, so
 * waiting for the answer is never mistaken for a stalled upload.
 */
export function watchBodyIdle(request: FastifyRequest, reply: FastifyReply, ms: number, stalled: () => void): void {
  if (ms <= 0) return;
  const raw = request.raw;
  // Kept: once the answer is out, the request lets go of its socket (raw.socket is null then).
  const socket = raw.socket;
  let armed = true;
  const disarm = () => {
    if (!armed) return;
    armed = false;
    if (!socket.destroyed) socket.setTimeout(0);
  };
  raw.once("end", disarm);
  reply.raw.setTimeout(ms, () => {
    const wasArmed = armed;
    disarm();
    if (wasArmed && !raw.complete) stalled();
  });
}

/**
 * Whether the request body ended early because its sender went away (the connection closed
 * before the body was in), as opposed to being cut by whoever read it: a store that failed
 * destroys the body it was reading with its own error, which must still be answered as a
 * failure. Node destroys a request whose connection closes half-way with `ECONNRESET`
 * "aborted"; the error a stream was destroyed with stays on it (`errored`).
 */
export function senderWentAway(raw: IncomingMessage): boolean {
  if (raw.complete || !raw.destroyed) return false;
  const cause = raw.errored as (Error & { code?: string }) | null;
  return cause === null || (cause.code === "ECONNRESET" && cause.message === "aborted");
}
