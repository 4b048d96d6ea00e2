// `npm run docs:settings`: writes the settings reference from the SETTINGS catalog.
import { writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { SETTINGS_REFERENCE_PATH, renderSettingsReference } from "../packages/kit/src/settings-reference.js";

const target = join(resolve(dirname(fileURLToPath(import.meta.url)), ".."), SETTINGS_REFERENCE_PATH);
writeFileSync(target, renderSettingsReference());
process.stdout.write(`wrote ${SETTINGS_REFERENCE_PATH}\n`);
