import type { FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { ACCESS_CATEGORY, clientAddress, type AddressMatcher } from "@svc/kit";
import { readPresentedKey } from "./key-reader.js";

const BYTES_SO_FAR = Symbol("bytes written before this response");
type CountedSocket = { bytesWritten: number; [BYTES_SO_FAR]?: number };

/**
 * One access line per request (the gateway's record of who did what): method, path (without
 * the query, which may carry what a client should not have put there), status, principal,
 * bytes sent, duration and client address; never a key or a cookie. A refused request names
 * the key it presented by its id, or the person its console session stands for
 * (`person:<tenant>:<id>`), so a 401/403/429 says who was turned away.
 *
 * Kept cheap on the hot path: one child logger whose bindings are serialised once, a flat
 * object per line and no parse when it lands in the log ring (packages/kit/src/logger.ts keeps
 * access lines in a ring of their own). Bytes are what the socket wrote since the previous
 * answer on it, headers included (requests on one connection are answered in turn).
 */
export function accessLogFactory(deps: { log: Logger; trustedProxies: AddressMatcher }) {
  // The line's fields are fixed and hold no secret (a key appears only as its id), so the child
  // drops the service logger's wildcard redaction (`*.key`, `*.secret`, …), which cost about 7 of
  // the 11 µs a line took; `key` stays redacted, and the logger's text scrub still runs.
  const access = deps.log.child({ category: ACCESS_CATEGORY }, { redact: { paths: ["key"], censor: "[redacted]" } });
  return function logAccess(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
    const socket = request.raw.socket as unknown as CountedSocket | null;
    let bytes: number | undefined;
    if (socket) {
      bytes = socket.bytesWritten - (socket[BYTES_SO_FAR] ?? 0);
      socket[BYTES_SO_FAR] = socket.bytesWritten;
    }
    // Probes are the orchestrator's, many a minute: they would only crowd the record out.
    if (request.url.startsWith("/health/")) return done();
    const url = request.url;
    const q = url.indexOf("?");
    access.info(
      {
        method: request.method,
        path: q < 0 ? url : url.slice(0, q),
        status: reply.statusCode,
        principal: request.forwardedPrincipal || request.claimedPrincipal || presentedBy(request),
        // The key's label as the rights cache holds it: no lookup per line.
        keyLabel: request.callerRights?.label,
        bytes,
        ms: Math.round(reply.elapsedTime * 10) / 10,
        from: clientAddress(request.raw.socket?.remoteAddress, request.headers["x-forwarded-for"], deps.trustedProxies),
      },
      "access",
    );
    done();
  };
}

/** Who a refused request claimed to be: the presented key's id (never the key), or nobody. */
function presentedBy(request: FastifyRequest): string {
  const p = readPresentedKey(request.headers);
  return p.kind === "key" ? `key:${p.key.tenant}:${p.key.id}` : p.kind === "malformed" ? "malformed-key" : "anonymous";
}
