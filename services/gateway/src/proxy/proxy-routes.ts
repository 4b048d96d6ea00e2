import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import httpProxy, { type FastifyHttpProxyOptions } from "@fastify/http-proxy";
import type { FastifyReplyFromHooks } from "@fastify/reply-from";
import { sendUnexpected } from "@svc/kit";
import { DownloadPool } from "./download-pool.js";
import { forwardDownload } from "./download-forwarder.js";
import { SigningPool, claimIdentity, identityStamp } from "./identity-stamp.js";
import { ROUTES, type Route, type Upstreams } from "./route-table.js";

type ProxyHandler = NonNullable<FastifyHttpProxyOptions["handler"]>;

export interface ProxyDeps {
  upstreams: Upstreams;
  internalSecret: string;
  /** Upstream connection pool size per service. */
  connections?: number;
}

/**
 * Forwards each route of the table to its upstream by its transport. Requests arrive here
 * admitted, with `forwardedPrincipal` set (domain/admission.ts).
 */
export function registerProxyRoutes(app: FastifyInstance, deps: ProxyDeps, routes: readonly Route[] = ROUTES): void {
  const stamp = identityStamp(deps.internalSecret);
  const connections = deps.connections ?? 64;

  const replyOptions: FastifyReplyFromHooks = {
    // `headers` is reply-from's own copy of the client's headers.
    rewriteRequestHeaders: (request, headers) => {
      claimIdentity(headers, request.forwardedPrincipal);
      return headers;
    },
    onError: (reply, error) => {
      const err = (error as { error?: unknown })?.error ?? error;
      sendUnexpected(reply.request as FastifyRequest, reply as FastifyReply, err);
    },
  };

  // One keep-alive pool per upstream service (shared by its prefixes). Upstreams keep idle
  // connections 65 s; we drop ours first.
  const pools = new Map<string, SigningPool>();
  const poolFor = (origin: string) => {
    let pool = pools.get(origin);
    if (!pool) {
      pool = new SigningPool(origin, { connections, pipelining: 1, keepAliveTimeout: 60_000 }, stamp);
      pools.set(origin, pool);
    }
    return pool;
  };

  // The download pool reads plain http only; an https upstream is served `pooled`.
  const downloadPools = new Map<string, DownloadPool>();
  const downloadHandlerFor = (upstream: URL): ProxyHandler | undefined => {
    if (upstream.protocol !== "http:") return undefined;
    let downloads = downloadPools.get(upstream.origin);
    if (!downloads) {
      downloads = new DownloadPool({ host: upstream.hostname, port: Number(upstream.port || 80), connections, timeoutMs: 60_000 });
      downloadPools.set(upstream.origin, downloads);
    }
    const pool = downloads;
    const host = upstream.host;
    return (request, reply, dest, options) => {
      // Anything the download pool cannot read (a body not delimited by Content-Length) is
      // sent again the general way: a GET may be repeated.
      const general = () => reply.from(dest, options);
      if (request.method !== "GET") return general();
      forwardDownload(pool, request, reply, dest, host, stamp, general);
      return reply;
    };
  };

  app.addHook("onClose", async () => {
    for (const downloads of downloadPools.values()) downloads.close();
    await Promise.all([...pools.values()].map((p) => p.close()));
  });

  for (const route of routes) {
    const upstream = deps.upstreams[route.upstream];
    const url = new URL(upstream);
    app.register(httpProxy, {
      upstream,
      prefix: route.prefix,
      rewritePrefix: route.prefix,
      replyOptions,
      undici: poolFor(url.origin),
      // Per-request log lines cost throughput (as in createBaseApp); failures are still logged.
      disableRequestLogging: true,
      handler: route.transport === "downloads" ? downloadHandlerFor(url) : undefined,
    });
  }
}
