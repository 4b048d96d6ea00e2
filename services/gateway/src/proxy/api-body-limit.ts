import { Readable } from "node:stream";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { problem } from "@svc/contracts";
import { bodyDigest, readWhole, sendProblem } from "@svc/kit";
import { ROUTES } from "./route-table.js";

const DIGESTS = new WeakMap<FastifyRequest, string>();

/** The digest of an API body read here (`sha256=…`), which the identity signature binds; undefined without a body. */
export function apiBodyDigest(request: FastifyRequest): string | undefined {
  return DIGESTS.get(request);
}

/**
 * The administration API (and the console) takes bodies up to the services' body limit; the gateway refuses a
 * larger one itself, with 413, before proxying. Forwarded, the upstream would answer 413 after
 * its first megabyte and close the connection while the gateway still wrote, and the caller
 * got a 500 (`write EPIPE`). A declared length is judged before a byte is read; every body is
 * read here (a chunked one up to the limit) and forwarded from memory: API bodies are small,
 * and the identity signature binds the body's digest, which must be known before it is sent.
 */
export function limitApiBodies(app: FastifyInstance, limit: number): void {
  // Every route of the `api` transport: the administration API, and the console's form posts,
  // whose bodies the console checks against the signature like every upstream.
  const prefixes = ROUTES.filter((r) => r.transport === "api").map((r) => r.prefix);
  const isApi = (request: FastifyRequest) => {
    const url = request.url;
    for (const p of prefixes) if (url.startsWith(p) && (url.length === p.length || url[p.length] === "/" || url[p.length] === "?")) return true;
    return false;
  };
  // The rest of the body is read and dropped (node does it once the answer is sent), so the
  // caller, still writing, reads the 413 instead of a reset connection.
  const tooLarge = (reply: FastifyReply) =>
    sendProblem(reply, "api", problem("payload_too_large", `the body is larger than the ${limit}-byte limit of the API`));

  app.addHook("onRequest", async (request, reply) => {
    if (!isApi(request)) return;
    const declared = request.headers["content-length"];
    if (declared !== undefined && Number(declared) > limit) return tooLarge(reply);
  });

  app.addHook("preHandler", async (request, reply) => {
    if (!isApi(request)) return;
    const body = request.body as Readable | undefined;
    if (!(body instanceof Readable)) return;
    const whole = await readWhole(body, limit);
    if (!whole) return tooLarge(reply);
    DIGESTS.set(request, bodyDigest(whole));
    request.body = Readable.from([whole]);
  });
}
