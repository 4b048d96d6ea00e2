import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import httpProxy, { type FastifyHttpProxyOptions } from "@fastify/http-proxy";
import replyFrom, { type FastifyReplyFromHooks } from "@fastify/reply-from";
import { declaredContentType, senderWentAway, setContentTypeAside, upstreamAddress, type AddressMatcher, type UpstreamAddress } from "@svc/kit";
import { bodyGuardFactory } from "./body-guard.js";
import { DownloadPool } from "./download-pool.js";
import { forwardDownload } from "./download-forwarder.js";
import { inertContentFactory } from "./inert-content.js";
import { apiBodyDigest } from "./api-body-limit.js";
import { stampForwardedOrigin } from "./forwarded-origin.js";
import { NOT_FORWARDED, NOT_FORWARDED_TO_CONSOLE, SigningPool, claimIdentity, identityStamp } from "./identity-stamp.js";
import { uploadForwarder } from "./upload-forwarder.js";
import { answerUpstreamFailure } from "./upstream-failure.js";
import { CONSOLE_HOME, ROUTES, type Route, type Transport, type Upstreams } from "./route-table.js";

type ProxyHandler = NonNullable<FastifyHttpProxyOptions["handler"]>;

export interface ProxyDeps {
  upstreams: Upstreams;
  internalSecret: string;
  /** Upstream connections per service and transport (downloads, uploads, API calls each have their own). */
  connections?: number;
  /** A request body that sends nothing for this long is cut with 408 (svc.upload-idle-timeout); 0: never. */
  uploadIdleTimeoutMs?: number;
  /** Most request bodies one caller may be sending at once (svc.upload-concurrency); 0: no cap. */
  uploadConcurrency?: number;
  trustedProxies: AddressMatcher;
  /** Artifacts are served from an origin of their own (svc.artifacts.separate-origin): nothing is forced to be saved. */
  artifactsSeparateOrigin?: boolean;
  /** How long a download's upstream may send nothing, before its answer or within it (default 60 s): then 504. */
  upstreamSilenceMs?: number;
}

/**
 * Forwards each route of the table to its upstream by its transport. Requests arrive here
 * admitted, with `forwardedPrincipal` set (domain/admission.ts).
 */
export function registerProxyRoutes(app: FastifyInstance, deps: ProxyDeps, routes: readonly Route[] = ROUTES): void {
  const stamp = identityStamp(deps.internalSecret);
  const connections = deps.connections ?? 64;
  const inert = inertContentFactory({ separateOrigin: deps.artifactsSeparateOrigin ?? false });
  const bodies = bodyGuardFactory({ idleMs: deps.uploadIdleTimeoutMs ?? 30_000, perCaller: deps.uploadConcurrency ?? 16, trustedProxies: deps.trustedProxies });

  const failed = (reply: FastifyReply, error: unknown) => {
    // Already answered: a body cut for stalling (body-guard.ts), whose upstream then failed.
    if (reply.sent || reply.raw.headersSent) return;
    // The client went away (an upload abandoned half-way): nobody to answer, nothing broken here.
    if (senderWentAway(reply.request.raw)) {
      reply.request.log.info({ method: reply.request.method, url: reply.request.url }, "the client went away before its request body ended");
      return;
    }
    answerUpstreamFailure(reply.request as FastifyRequest, reply, error);
  };

  const replyOptionsFor = (route: Route): FastifyReplyFromHooks => ({
    // `headers` is reply-from's own copy of the client's headers.
    rewriteRequestHeaders: (request, headers) => {
      claimIdentity(headers, request.forwardedPrincipal, apiBodyDigest(request as FastifyRequest), route.cookie ? NOT_FORWARDED_TO_CONSOLE : NOT_FORWARDED);
      const declared = declaredContentType(request);
      if (declared !== undefined) headers["content-type"] = declared;
      return headers;
    },
    onError: (reply, error) => failed(reply as FastifyReply, (error as { error?: unknown })?.error ?? error),
  });

  // Keep-alive pools per upstream service and transport, so one kind of traffic never waits for
  // connections another holds (stalled uploads, a burst of downloads). Uploads are not queued
  // behind a connection limit: a queued upload holds its client's connection all the same, and
  // one that stalls would hold up every upload behind it; the per-caller cap and the idle
  // timeout bound them instead (body-guard.ts). Upstreams keep idle connections 65 s; we drop ours first.
  const pools = new Map<string, SigningPool>();
  const poolFor = (upstream: UpstreamAddress, transport: Transport) => {
    const name = `${transport} ${upstream.key}`;
    let pool = pools.get(name);
    if (!pool) {
      pool = new SigningPool(upstream.origin, { socketPath: upstream.socketPath, connections: transport === "uploads" ? null : connections, pipelining: 1, keepAliveTimeout: 60_000 }, stamp);
      pools.set(name, pool);
    }
    return pool;
  };

  // The download pool reads plain http only; an https upstream is served by the undici pool.
  const downloadPools = new Map<string, DownloadPool>();
  const downloadHandlerFor = (upstream: UpstreamAddress, route: Route): ProxyHandler | undefined => {
    if (upstream.origin.startsWith("https:")) return undefined;
    let downloads = downloadPools.get(upstream.key);
    if (!downloads) {
      downloads = new DownloadPool({ host: upstream.hostname, port: upstream.port, socketPath: upstream.socketPath, connections, timeoutMs: deps.upstreamSilenceMs ?? 60_000 });
      downloadPools.set(upstream.key, downloads);
    }
    const pool = downloads;
    const host = upstream.host;
    const made = route.inert ? inert : undefined;
    return (request, reply, dest, options) => {
      // Anything the download pool cannot read (a body not delimited by Content-Length) is
      // sent again the general way: a GET may be repeated.
      const general = () => reply.from(dest, options);
      if (request.method !== "GET") return general();
      forwardDownload(pool, request, reply, dest, host, stamp, general, made);
      return reply;
    };
  };

  // Uploads stream their body with its digest in a trailer, which undici cannot send.
  const uploadForwarders = new Map<string, ReturnType<typeof uploadForwarder>>();
  const uploadHandlerFor = (upstream: UpstreamAddress, route: Route): ProxyHandler => {
    const name = `${route.inert ? "inert " : ""}${upstream.key}`;
    let uploads = uploadForwarders.get(name);
    if (!uploads) {
      uploads = uploadForwarder({ ...upstream, secure: upstream.origin.startsWith("https:") }, stamp, failed, route.inert ? inert : undefined);
      uploadForwarders.set(name, uploads);
    }
    const forward = uploads.forward;
    return (request, reply, dest) => forward(request, reply, dest);
  };

  app.addHook("onClose", async () => {
    for (const downloads of downloadPools.values()) downloads.close();
    for (const uploads of uploadForwarders.values()) uploads.close();
    await Promise.all([...pools.values()].map((p) => p.close()));
  });

  const stampOrigin = (request: FastifyRequest, _reply: FastifyReply, done: () => void) => (stampForwardedOrigin(request, deps.trustedProxies), done());

  for (const route of routes) {
    // An upstream over a Unix socket (`unix:/path.sock`) is addressed as http://localhost on it.
    const url = upstreamAddress(deps.upstreams[route.upstream]);
    app.register(async (scope) => {
      // The gateway parses no body: the proxy's catch-all parser hands every body on as it
      // comes (fastify's text/plain parser would read it whole, decode it and cap it at 1 MiB).
      scope.removeAllContentTypeParsers();
      scope.addHook("onRequest", bodies.guard);
      // The artifacts service builds absolute URLs from the origin the client addressed, and the
      // console its sign-in callbacks and its forms' origin check: both get it from here alone.
      if (route.upstream === "artifacts" || route.upstream === "console") scope.addHook("onRequest", stampOrigin);
      // An artifact body is opaque bytes whatever Content-Type it declares (even one fastify
      // cannot parse); the header goes upstream as sent.
      if (route.transport === "uploads") scope.addHook("onRequest", (request, _reply, done) => (setContentTypeAside(request), done()));
      // Every answer fastify sends here (the undici path, a refusal, a failure); the download
      // pool's answers are made inert where they are written (download-forwarder.ts).
      if (route.inert) scope.addHook("onSend", inert.onSend);
      await scope.register(httpProxy, {
        upstream: url.origin,
        prefix: route.prefix,
        rewritePrefix: route.rewrite ?? route.prefix,
        replyOptions: replyOptionsFor(route),
        undici: poolFor(url, route.transport),
        httpMethods: route.methods ? [...route.methods] : undefined,
        // Per-request log lines cost throughput (as in createBaseApp); failures are still logged.
        disableRequestLogging: true,
        handler: route.transport === "downloads" ? downloadHandlerFor(url, route) : route.transport === "uploads" ? uploadHandlerFor(url, route) : undefined,
      });
    });
  }

  // `GET /` is the console's home for a browser (the admission classified it by Accept) and,
  // for any other client, the same 404 as before the console existed.
  const home = upstreamAddress(deps.upstreams[CONSOLE_HOME.upstream]);
  app.register(async (scope) => {
    await scope.register(replyFrom, { base: home.origin, undici: poolFor(home, CONSOLE_HOME.transport), disableRequestLogging: true });
    const options = replyOptionsFor(CONSOLE_HOME);
    const handler = (request: FastifyRequest, reply: FastifyReply) => (request.target?.kind === "console" ? reply.from(request.url, options) : reply.callNotFound());
    scope.addHook("onRequest", stampOrigin);
    scope.get("/", handler);
  });
}
