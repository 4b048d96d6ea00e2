import { invalid } from "@svc/contracts";
import { parseArtifactTarget } from "@svc/grants";
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
/** An import's raw item: a file's path, read as the file routes read one (a 400 for a path they would refuse). */
function rawSpec(spec: string): { name: string } {
  let target: ReturnType<typeof parseArtifactTarget> | undefined;
  try {
    target = parseArtifactTarget(`/repository/x/${spec.split("/").map(encodeURIComponent).join("/")}`);
  } catch {
    target = undefined;
  }
  if (!target || target.folder) throw invalid("packages", `${spec} is not a file's path`);
  return { name: target.path };
}

export const raw: FormatModule = {
  name: "raw",
  label: "raw (files)",
  create: (deps) => {
    const exported = { export: rawExportFactory({ metadata: deps.metadata, copy: artifactCopierFactory(deps) }) };
    const p = deps.proxy;
    if (!p) return exported;
    const proxy = rawProxyFactory({ upstreams: p.upstreams, isProxy: (name) => p.upstreamOf(name) !== undefined, log: deps.log });
    // An import's raw item is a file's path (domain/proxy-import.ts).
    const imports = { spec: rawSpec, paths: async (_repository: string, spec: string) => [rawSpec(spec).name] };
    return { ...exported, handle: proxy.handle, proxies: true, imports, beforeRead: (a, opts) => proxy.file(a.repository, a.path, opts) };
  },
};
