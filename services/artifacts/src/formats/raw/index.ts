import { artifactCopierFactory } from "../../domain/export-steps.js";
import type { FormatModule } from "../format.js";
import { rawExportFactory } from "./raw-export.js";

/**
 * Files, path for path: the file routes serve them (GET, HEAD, PUT, DELETE) and nothing else
 * does, so the only part the format has is its export. The smallest format (docs/internals/formats.md).
 */
export const raw: FormatModule = {
  name: "raw",
  label: "raw (files)",
  create: (deps) => ({ export: rawExportFactory({ metadata: deps.metadata, copy: artifactCopierFactory(deps) }) }),
};
