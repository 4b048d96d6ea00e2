import type { FastifyRequest } from "fastify";
import type { AddressMatcher } from "@svc/kit";

/** A host[:port] as a URL may carry it; anything else is not passed on. */
const HOST = /^[A-Za-z0-9.-]+(?::\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::\d{1,5})?$/;

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v)?.split(",")[0]?.trim();

/**
 * Tells the upstream which origin the client addressed, in X-Forwarded-Host and
 * X-Forwarded-Proto, so a package format can answer absolute URLs a client fetches next (npm's
 * `dist.tarball`): the client's Host and whether it came over TLS, or what a trusted proxy in
 * front of us (svc.trusted-proxies) says it was asked for. Whatever a client sent in those
 * headers itself is replaced.
 */
export function stampForwardedOrigin(request: FastifyRequest, trusted: AddressMatcher): void {
  const h = request.headers;
  const viaProxy = trusted(request.socket.remoteAddress ?? "");
  const host = (viaProxy ? first(h["x-forwarded-host"]) : undefined) ?? h.host;
  const proto = (viaProxy ? first(h["x-forwarded-proto"]) : undefined) ?? ((request.socket as { encrypted?: boolean }).encrypted ? "https" : "http");
  delete h["x-forwarded-host"];
  delete h["x-forwarded-proto"];
  if (host !== undefined && HOST.test(host)) h["x-forwarded-host"] = host;
  h["x-forwarded-proto"] = proto === "https" ? "https" : "http";
}

/** The two headers stampForwardedOrigin sets, as a download's request head carries them. */
export const ORIGIN_HEADERS = ["x-forwarded-host", "x-forwarded-proto"] as const;
