import http, { type IncomingMessage, type OutgoingHttpHeaders } from "node:http";
import https from "node:https";
import { Readable, finished, pipeline } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import { IDENTITY_BODY_TRAILER } from "@svc/contracts";
import { BODY_IN_TRAILER, bodyDigest, type UpstreamAddress, declaredContentType, hasRequestBody, readWhole, sha256Through } from "@svc/kit";
import { answerFromPool, upstreamPath } from "./download-forwarder.js";
import { DownloadPool } from "./download-pool.js";
import type { InertContent } from "./inert-content.js";
import { NOT_FORWARDED, type StampIdentity } from "./identity-stamp.js";

/** Request headers that describe the client's connection or body framing, not the request: ours are our own. */
const NOT_SENT = new Set([...NOT_FORWARDED, "connection", "host", "content-length", "transfer-encoding"]);
/** Answer headers about the upstream connection, not the answer. */
const NOT_ANSWERED = new Set(["connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "trailer", "upgrade"]);

/** Bodies up to this size with a declared length are read whole: a request's signed up front, an answer's sent in one write. */
const SMALL_BODY = 64 * 1024;

/** Waiting for the upstream, in either direction, before the exchange is given up (undici's default for the other transports). */
const IDLE_MS = 300_000;

export type ForwardFailed = (reply: FastifyReply, error: unknown) => void;

/**
 * The `uploads` transport: writes to the store. undici cannot send request trailers, so these
 * go through Node's http client, which can: the body streams through unchanged and unbuffered
 * while its SHA-256 is computed, and follows it in the `x-svc-identity-body-sig` trailer that
 * binds it to the signature (identity.ts). The upstream fails the body before storing it when
 * the trailer does not match. One keep-alive agent per upstream, with no cap on connections
 * (body-guard.ts bounds uploads per caller and cuts stalled ones); idle connections are dropped
 * after 60 s, before the upstream's 65.
 *
 * A small body of a declared length is read whole and signed up front instead; to a plain http
 * upstream it goes through a pool of its own (download-pool.ts), head and body in one write,
 * which costs the gateway less than Node's http client per request.
 */
export function uploadForwarder(upstream: UpstreamAddress & { secure: boolean }, stamp: StampIdentity, failed: ForwardFailed, inert: InertContent | undefined) {
  const { secure, socketPath } = upstream;
  const agent = secure ? new https.Agent({ keepAlive: true, timeout: 60_000 }) : new http.Agent({ keepAlive: true, timeout: 60_000 });
  const send = secure ? https.request : http.request;
  // As many connections as there are writes under way, as with the agent; their answers are
  // small, so each connection's read buffer is too.
  const small = secure
    ? undefined
    : new DownloadPool({ host: upstream.hostname, port: upstream.port, socketPath, connections: Number.POSITIVE_INFINITY, timeoutMs: 60_000, answerTimeoutMs: IDLE_MS, keepBuffers: 16, bufferBytes: 16 * 1024 });

  const forward = (request: FastifyRequest, reply: FastifyReply, dest: string): FastifyReply => {
    const path = upstreamPath(request, dest);
    const connection = request.headers.connection;
    const listed = typeof connection === "string" ? connection.toLowerCase().split(",").map((t) => t.trim()) : [];
    const headers: OutgoingHttpHeaders = {};
    for (const name in request.headers) if (!NOT_SENT.has(name) && !listed.includes(name)) headers[name] = request.headers[name];
    // Set aside by the route so fastify would not parse the body (request-body.ts): sent as the client sent it.
    const type = declaredContentType(request);
    if (type !== undefined) headers["content-type"] = type;
    headers.host = upstream.host;
    const streamed = hasRequestBody(request);
    const body = request.body instanceof Readable ? request.body : request.raw;

    const open = (binding: string | undefined) => {
      const signature = stamp(headers as Record<string, unknown>, request.method, path, request.forwardedPrincipal, binding);
      const up = send({ ...(socketPath ? { socketPath } : { hostname: upstream.hostname, port: upstream.port }), method: request.method, path, headers, agent });
      up.setTimeout(IDLE_MS, () => up.destroy(new Error(`the upstream sent nothing for ${IDLE_MS} ms`)));
      up.once("error", (err) => failed(reply, err));
      up.once("response", (res: IncomingMessage) => answer(reply, res, failed));
      reply.raw.once("close", () => {
        if (!reply.raw.writableFinished) up.destroy();
      });
      return { up, signature };
    };

    if (!streamed) {
      headers["content-length"] = "0";
      open(undefined).up.end();
      return reply;
    }
    const declared = Number(request.headers["content-length"]);
    if (request.headers["transfer-encoding"] === undefined && Number.isSafeInteger(declared) && declared <= SMALL_BODY) {
      // A small body of a declared length (an npm publish, a POM, a checksum file) is read whole
      // and signed up front: it goes upstream in one write with its length, no chunks and no
      // trailer, so the upstream wakes once for it. Still read through the body guard.
      readWhole(body, declared).then(
        (whole) => {
          if (reply.sent || reply.raw.headersSent) return;
          // Node's parser ends a body at its Content-Length: never longer than declared.
          if (!whole) return failed(reply, new Error(`the request body ran past its Content-Length of ${declared}`));
          headers["content-length"] = String(whole.length);
          if (!small) return open(bodyDigest(whole)).up.end(whole);
          stamp(headers as Record<string, unknown>, request.method, path, request.forwardedPrincipal, bodyDigest(whole));
          // Every write answers with a length; one that does not cannot be sent again.
          const unframed = () => failed(reply, new Error("the upstream answered a write without a Content-Length"));
          answerFromPool(small, request, reply, requestHead(request.method, path, headers), whole, unframed, inert);
        },
        (err: unknown) => failed(reply, err),
      );
      return reply;
    }
    headers["transfer-encoding"] = "chunked";
    headers.trailer = IDENTITY_BODY_TRAILER;
    const { up, signature } = open(BODY_IN_TRAILER);
    // The trailer is written by up.end(), which the pipeline calls once this has flushed.
    const digest = sha256Through((sha256) => void up.addTrailers({ [IDENTITY_BODY_TRAILER]: stamp.trailer(signature, sha256) }));
    // A body that fails (the client went away, body-guard.ts cut it) destroys the upstream
    // request: the upstream sees its body end early and stores nothing. An upstream that fails
    // only unpipes the body (pipe, not pipeline, between the two), which stays open so the
    // client can still be answered (upstream-failure.ts).
    body.pipe(digest);
    finished(body, (err) => {
      if (err) digest.destroy(err);
    });
    pipeline(digest, up, () => {});
    return reply;
  };

  return {
    forward,
    close: () => {
      small?.close();
      agent.destroy();
    },
  };
}

/** A request head in latin1, as Node's http client would write it: the headers as given, in order. */
function requestHead(method: string, path: string, headers: OutgoingHttpHeaders): string {
  let head = `${method} ${path} HTTP/1.1\r\n`;
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) head += `${name}: ${v}\r\n`;
    else head += `${name}: ${value}\r\n`;
  }
  return `${head}\r\n`;
}

function answer(reply: FastifyReply, res: IncomingMessage, failed: ForwardFailed): void {
  if (reply.sent || reply.raw.headersSent) {
    res.resume();
    return;
  }
  const status = res.statusCode ?? 0;
  const respond = (body?: Readable | Buffer) => {
    const headers: Record<string, string | string[]> = {};
    for (const name in res.headers) if (!NOT_ANSWERED.has(name)) headers[name] = res.headers[name]!;
    reply.code(res.statusCode ?? 502).headers(headers);
    reply.send(body);
  };
  if (status === 204 || status === 304 || reply.request.method === "HEAD") {
    // No body goes to the client; the upstream's (empty) one is read so the connection is free again.
    res.resume();
    return respond();
  }
  const length = Number(res.headers["content-length"]);
  if (!Number.isSafeInteger(length) || length > SMALL_BODY) return respond(res);
  // A small answer of a declared length (what a write answers) goes to the client whole, its
  // headers and body in one write, rather than piped through as it arrives.
  readWhole(res, length).then(
    (whole) => {
      if (reply.sent || reply.raw.headersSent) return;
      if (!whole) return failed(reply, new Error(`the upstream answer ran past its Content-Length of ${length}`));
      respond(whole);
    },
    (err: unknown) => failed(reply, err),
  );
}
