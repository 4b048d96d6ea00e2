import type { FormatModule } from "./format.js";
import { go } from "./go/index.js";
import { cargo } from "./cargo/index.js";
import { maven } from "./maven/index.js";
import { npm } from "./npm/index.js";
import { oci } from "./oci/index.js";
import { pypi } from "./pypi/index.js";
import { raw } from "./raw/index.js";

/**
 * The formats a repository may have: one row each (docs/internals/formats.md). A format is
 * its folder beside this file and its row here; nothing else in the service names one.
 */
export const FORMATS: readonly FormatModule[] = [raw, npm, maven, pypi, go, cargo, oci];
