import type { FastifyRequest } from "fastify";
import type { AddressMatcher } from "@svc/kit";
import { addressedHost, firstValue } from "../domain/request-target.js";

/**
 * Tells the upstream which origin the client addressed, in X-Forwarded-Host and
 * X-Forwarded-Proto, so a package format can answer absolute URLs a client fetches next (npm's
 * `dist.tarball`): the client's Host and whether it came over TLS, or what a trusted proxy in
 * front of us (svc.trusted-proxies) says it was asked for. Whatever a client sent in those
 * headers itself is replaced. Admission has refused a Host that is not one host[:port]
 * (request-target.ts); a request without one (HTTP/1.0) goes on without X-Forwarded-Host.
 */
export function stampForwardedOrigin(request: FastifyRequest, trusted: AddressMatcher): void {
  const h = request.headers;
  const viaProxy = trusted(request.socket.remoteAddress ?? "");
  let host: string | undefined;
  try {
    host = addressedHost(request.raw, viaProxy);
  } catch {
    host = undefined;
  }
  const proto = (viaProxy ? firstValue(h["x-forwarded-proto"]) : undefined) ?? ((request.socket as { encrypted?: boolean }).encrypted ? "https" : "http");
  delete h["x-forwarded-host"];
  delete h["x-forwarded-proto"];
  if (host !== undefined) h["x-forwarded-host"] = host;
  h["x-forwarded-proto"] = proto === "https" ? "https" : "http";
}

/** The two headers stampForwardedOrigin sets, as a download's request head carries them. */
export const ORIGIN_HEADERS = ["x-forwarded-host", "x-forwarded-proto"] as const;
