import type { FastifyReply, FastifyRequest } from "fastify";
import { problem } from "@svc/contracts";
import { newReference, sendProblem, sendUnexpected, surfaceOf } from "@svc/kit";

/** The code the download pool gives a connection its upstream closed (no system error to name it). */
export const UPSTREAM_CLOSED = "SVC_UPSTREAM_CLOSED";
/** The code the download pool gives a connection whose upstream sent nothing for its whole timeout. */
export const UPSTREAM_SILENT = "SVC_UPSTREAM_SILENT";

/** Seconds a client is asked to wait when the service behind the gateway went away mid-request (as kit answers a refused one). */
const RETRY_AFTER = "5";

/** How long a request body that is still arriving is read and thrown away after its answer, so the client can read that answer. */
const LINGER_MS = 10_000;

/**
 * The service was there and its connection ended before the answer: it died or restarted
 * mid-request. (Nothing listening at all is kit's dependency rule: sendUnexpected answers 503.)
 */
const LOST = new Set(["ECONNRESET", "EPIPE", "UND_ERR_SOCKET", "UND_ERR_CLOSED", "ERR_STREAM_PREMATURE_CLOSE", UPSTREAM_CLOSED]);

/** Whether a forwarding failure (or one it wraps) carries one of `codes`. */
function hasCode(err: unknown, codes: ReadonlySet<string>, depth = 0): boolean {
  if (depth > 5 || typeof err !== "object" || err === null) return false;
  const e = err as { code?: unknown; cause?: unknown; error?: unknown; errors?: unknown };
  if (typeof e.code === "string" && codes.has(e.code)) return true;
  return [e.cause, e.error, ...(Array.isArray(e.errors) ? e.errors : [])].some((inner) => hasCode(inner, codes, depth + 1));
}

/** Whether a forwarding failure is the upstream's connection lost mid-request, walking wrapped causes. */
export const upstreamLost = (err: unknown): boolean => hasCode(err, LOST);
const SILENT = new Set([UPSTREAM_SILENT]);

/**
 * Answers a request whose upstream failed before answering. An upstream that went away is an
 * outage a client can wait out, answered at once with Retry-After: 503 when nothing listens, 502
 * when the service stopped or restarted mid-request. Like every failure the server did not mean,
 * the answer carries a reference and the log the whole failure under it (the spec's model).
 * A request body still arriving is read and dropped for a while after the answer (`Connection:
 * close`), so a client that sends its whole body before it reads (Python's requests, curl -T)
 * gets the answer instead of a reset or a wait until some timeout.
 */
export function answerUpstreamFailure(request: FastifyRequest, reply: FastifyReply, err: unknown): void {
  const midBody = !request.raw.complete && !request.raw.destroyed;
  if (midBody) reply.header("connection", "close");
  if (hasCode(err, SILENT)) {
    // Hung or overloaded behind the gateway (an object store that stopped answering, say): an outage to wait out.
    const reference = newReference();
    request.log.error({ err, reference, status: 504 }, `Unexpected failure ${reference} while ${request.method} ${request.url}`);
    const p = problem("gateway_timeout", "the service that serves this request sent nothing in time: retry shortly", { reference });
    sendProblem(reply, surfaceOf(request.url, request.headers.accept, request.headers["user-agent"]), p, { "retry-after": RETRY_AFTER });
  } else if (upstreamLost(err)) {
    const reference = newReference();
    request.log.error({ err, reference, status: 502 }, `Unexpected failure ${reference} while ${request.method} ${request.url}`);
    const p = problem("bad_gateway", "the service that serves this request closed its connection before answering (it stopped or restarted): retry shortly", { reference });
    sendProblem(reply, surfaceOf(request.url, request.headers.accept, request.headers["user-agent"]), p, { "retry-after": RETRY_AFTER });
  } else {
    // Refused: kit's dependency rule answers 503 with Retry-After; anything else is a 500.
    sendUnexpected(request, reply, err);
  }
  if (midBody) drainAfterAnswer(request);
}

function drainAfterAnswer(request: FastifyRequest): void {
  const body = request.raw;
  const socket = body.socket;
  const wrapper = request.body;
  if (wrapper && typeof (wrapper as { unpipe?: unknown }).unpipe === "function") (wrapper as NodeJS.ReadableStream).unpipe();
  body.unpipe();
  // Node closes a `Connection: close` socket as soon as the answer is written, and closing one
  // with unread bytes resets it: a client still sending would see a reset (EPIPE), not the answer.
  // Instead the answer is ended with a FIN and the socket closed once the body is all read (or the
  // linger is over), so the client reads the answer after its last byte.
  let answered = false;
  let read = false;
  const closeWhenDone = () => {
    if (answered && read) socket.destroy();
  };
  const onAnswered = () => {
    answered = true;
    closeWhenDone();
  };
  socket.destroySoon = () => {
    socket.end();
    if (socket.writableFinished) onAnswered();
    else socket.once("finish", onAnswered);
  };
  const linger = setTimeout(() => socket.destroy(), LINGER_MS);
  linger.unref();
  socket.once("close", () => clearTimeout(linger));
  body.once("end", () => {
    read = true;
    closeWhenDone();
  });
  body.on("data", () => {});
  body.resume();
}
