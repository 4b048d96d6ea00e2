import { artifactCopierFactory } from "../../domain/export-steps.js";
import type { FormatModule } from "../format.js";
import { rawExportFactory } from "./raw-export.js";
import { rawProxyFactory } from "./raw-proxy.js";

/**
 * Files, path for path: the file routes serve them (GET, HEAD, PUT, DELETE) and nothing else
 * does, so besides its export the format has only what a proxy repository needs: a file it lacks
 * fetched from its upstream (docs/integration/clients.md, "Raw proxy repositories"), writes refused.
 * The smallest format (docs/internals/formats.md).
 */
export const raw: FormatModule = {
  name: "raw",
  label: "raw (files)",
  create: (deps) => {
    const exported = { export: rawExportFactory({ metadata: deps.metadata, copy: artifactCopierFactory(deps) }) };
    const p = deps.proxy;
    if (!p) return exported;
    const proxy = rawProxyFactory({ upstreams: p.upstreams, isProxy: (name) => p.upstreamOf(name) !== undefined, log: deps.log });
    return { ...exported, handle: proxy.handle, proxies: true, beforeRead: (a) => proxy.file(a.repository, a.path) };
  },
};
