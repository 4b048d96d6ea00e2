import type { IncomingHttpHeaders } from "node:http";
import type { FastifyBaseLogger } from "fastify";
import { ServiceError } from "@svc/contracts";
import type { DeclaredDigests } from "../../domain/upload-checks.js";
import type { LiveFile, Upstreams } from "../../proxy/file-fetch.js";
import type { FormatHandler } from "../format.js";

/** The digest headers an upstream's answer may carry (this server's own GET answers X-Checksum-Sha256), strongest first. */
const DIGEST_HEADERS = [
  ["x-checksum-sha256", "sha256", 64],
  ["x-checksum-sha1", "sha1", 40],
] as const;

/**
 * The digests an upstream declares in the headers of its answer: X-Checksum-Sha256 and
 * X-Checksum-Sha1 (as this server, Artifactory and Nexus answer a GET). A value that is not
 * hexadecimal of the right length is no declaration: it is ignored, as a missing header is.
 */
export function headerDigests(headers: IncomingHttpHeaders): DeclaredDigests {
  const out: DeclaredDigests = {};
  for (const [header, name, length] of DIGEST_HEADERS) {
    const value = headers[header];
    const hex = typeof value === "string" ? value.trim().toLowerCase() : "";
    if (new RegExp(`^[0-9a-f]{${length}}$`).test(hex)) out[name] = [{ hex, header }];
  }
  return out;
}

const joinUrl = (base: string, rest: string) => `${base.replace(/\/+$/, "")}/${rest}`;

/**
 * The raw side of a proxy repository (docs/integration/clients.md, "Raw proxy repositories"): a
 * file it does not hold is fetched from `<upstream>/<path>` on its first request, once however
 * many ask, checked against the digests the upstream's answer declares in its headers (stored as
 * it is when it declares none), then served as a file, never fetched again. Writes are refused.
 */
export function rawProxyFactory(deps: { upstreams: Upstreams; isProxy: (repository: string) => boolean; log: FastifyBaseLogger }) {
  return {
    /** Refuses writes to a proxy repository (405); leaves everything else to the file routes. */
    handle: ((req, _reply, a) => {
      if (!deps.isProxy(a.repository) || req.method === "GET" || req.method === "HEAD") return undefined;
      return Promise.reject(
        new ServiceError("method_not_allowed", `${a.repository} is a proxy repository: it serves what its upstream has and takes no uploads or removals; upload to a hosted repository`, { headers: { allow: "GET, HEAD" } }),
      );
    }) satisfies FormatHandler,

    /** Makes sure a proxy repository holds `path` before it is served as a file; with `live`, maybe answers it as it arrives (Upstreams.file). */
    async file(repository: string, path: string, opts?: { live?: boolean }): Promise<LiveFile | undefined> {
      if (!deps.isProxy(repository)) return undefined;
      return deps.upstreams.file(repository, path, async () => ({
        url: joinUrl(deps.upstreams.upstream(repository).url, path.split("/").map(encodeURIComponent).join("/")),
        digests: {},
        what: path,
        declared: (headers) => {
          const declared = headerDigests(headers);
          if (Object.keys(declared).length === 0) deps.log.info({ repository, path }, "raw proxy: the upstream declares no digest for a file; stored as it is");
          return declared;
        },
      }), opts);
    },
  };
}
