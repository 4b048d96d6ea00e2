import type { FastifyReply, FastifyRequest } from "fastify";
import { CLIENT_ADDRESS_HEADER, IDENTITY_HEADERS, KEY_LABEL_HEADER } from "@svc/contracts";
import { SIGNED_HEADERS, STATUS_REASON_HEADER, asReasonPhrase, sendUnexpected } from "@svc/kit";
import type { DownloadPool } from "./download-pool.js";
import type { InertContent } from "./inert-content.js";
import { answerUpstreamFailure } from "./upstream-failure.js";
import { ORIGIN_HEADERS } from "./forwarded-origin.js";
import { NOT_FORWARDED, type StampIdentity } from "./identity-stamp.js";

/** Request headers a download does not pass on: beside NOT_FORWARDED, the upstream connection's own, and the origin the gateway stamps itself. */
const NOT_IN_HEAD = new Set([...NOT_FORWARDED, ...ORIGIN_HEADERS, CLIENT_ADDRESS_HEADER, KEY_LABEL_HEADER, "connection", "host", "content-length", "transfer-encoding"]);

/** The path reply-from would send: the destination resolved against the upstream, the client's query as it came. */
export function upstreamPath(request: FastifyRequest, dest: string): string {
  const q = request.url.indexOf("?");
  return new URL(dest, "http://upstream").pathname + (q < 0 ? "" : request.url.slice(q));
}

/** The request head sent upstream for a GET: the client's end-to-end headers, our host, the stamped identity. */
function downloadRequestHead(request: FastifyRequest, path: string, host: string, stamp: StampIdentity): string {
  let head = `GET ${path} HTTP/1.1\r\nhost: ${host}\r\n`;
  const connection = request.headers.connection;
  const listed = typeof connection === "string" ? connection.toLowerCase().split(",").map((t) => t.trim()) : [];
  const raw = request.raw.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const lower = raw[i]!.toLowerCase();
    if (NOT_IN_HEAD.has(lower) || listed.includes(lower)) continue;
    head += `${raw[i]}: ${raw[i + 1]}\r\n`;
  }
  for (const name of ORIGIN_HEADERS) {
    const v = request.headers[name];
    if (typeof v === "string") head += `${name}: ${v}\r\n`;
  }
  // The signed headers as the upstream will read them: the client's, less any its Connection header drops.
  const identity: Record<string, unknown> = {};
  for (const name of SIGNED_HEADERS) if (request.headers[name] !== undefined && !listed.includes(name)) identity[name] = request.headers[name];
  stamp(identity, "GET", path, request.forwardedPrincipal);
  for (const name of IDENTITY_HEADERS) if (identity[name] !== undefined) head += `${name}: ${identity[name] as string}\r\n`;
  return `${head}\r\n`;
}

/**
 * Answers a GET from the download pool (answerFromPool). `unframed` sends the request again
 * the general way when the pool cannot delimit the answer; `inert` makes the answer inert (an artifact).
 */
export function forwardDownload(
  pool: DownloadPool,
  request: FastifyRequest,
  reply: FastifyReply,
  dest: string,
  host: string,
  stamp: StampIdentity,
  unframed: () => void,
  inert: InertContent | undefined,
): void {
  answerFromPool(pool, request, reply, downloadRequestHead(request, upstreamPath(request, dest), host, stamp), undefined, unframed, inert);
}

/**
 * Sends a request through a pool and answers the client with what comes back: the upstream's
 * status and headers (made inert by `inert`), then its body in buffers the pool lends and takes
 * back once written. Fastify's onSend hooks do not see this answer: whatever they would add is
 * added here.
 */
export function answerFromPool(
  pool: DownloadPool,
  request: FastifyRequest,
  reply: FastifyReply,
  requestHead: string,
  body: Buffer | undefined,
  unframed: () => void,
  inert: InertContent | undefined,
): void {
  const res = reply.raw;
  const cancel = pool.request(requestHead, {
    head: ({ status, headers: upstream }) => {
      const headers = inert ? inert.headers(request.url, upstream) : upstream;
      try {
        // An upstream refusal's reason phrase (see app.ts) back in the status line.
        const at = headers.findIndex((h, i) => i % 2 === 0 && h.toLowerCase() === STATUS_REASON_HEADER);
        if (at < 0) res.writeHead(status, headers);
        else res.writeHead(status, asReasonPhrase(headers[at + 1] ?? ""), [...headers.slice(0, at), ...headers.slice(at + 2)]);
      } catch (err) {
        // A header Node will not send (a control character): refused like any other failure.
        cancel();
        sendUnexpected(request, reply, err);
        return;
      }
      reply.hijack();
    },
    data: (chunk, release) => {
      res.write(chunk, release);
    },
    end: () => {
      res.end();
    },
    unframed,
    fail: (err, headSent) => {
      if (headSent) res.destroy(err);
      else answerUpstreamFailure(request, reply, err);
    },
  }, body);
  // The client went away before the whole answer was written: drop the upstream connection.
  res.once("close", () => {
    if (!res.writableFinished) cancel();
  });
}
