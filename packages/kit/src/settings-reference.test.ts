import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { SETTINGS, SERVICE_NAMES, envName, type ServiceName } from "./settings.js";
import { SETTINGS_REFERENCE_PATH, renderSettingsReference } from "./settings-reference.js";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
type Field = keyof typeof SETTINGS;
const FIELDS = Object.keys(SETTINGS) as Field[];

/**
 * The settings fields a service's config.ts names: its Pick<Settings, "..."> list, its
 * requireSettings(s, [...]) list, or `s.<field>` reads. undefined when the service takes the
 * whole of Settings (the admin service: the posture is about all of them).
 */
function fieldsNamedBy(service: ServiceName): Set<Field> | undefined {
  const src = readFileSync(join(repoRoot, "services", service, "src", "config.ts"), "utf8");
  if (/=\s*Settings\s*;/.test(src)) return undefined;
  const named = new Set<Field>();
  for (const m of src.matchAll(/"(\w+)"|\bs\.(\w+)\b/g)) {
    const f = (m[1] ?? m[2]) as Field;
    if (FIELDS.includes(f)) named.add(f);
  }
  return named;
}

describe("settings reference", () => {
  it("docs/configuration/settings.md is the text rendered from the settings catalog", () => {
    const path = join(repoRoot, SETTINGS_REFERENCE_PATH);
    const committed = existsSync(path) ? readFileSync(path, "utf8") : "";
    expect(committed === renderSettingsReference(), `${SETTINGS_REFERENCE_PATH} is stale: run \`npm run docs:settings\` and commit the result`).toBe(true);
  });

  it("lists every setting with its environment variable and a description", () => {
    const text = renderSettingsReference();
    for (const d of Object.values(SETTINGS)) {
      expect(text).toContain(`| \`${d.name}\``);
      expect(text).toContain(`\`${envName(d.name)}\``);
      expect(d.description.trim().length, `${d.name} has no description`).toBeGreaterThan(10);
    }
    expect(text).toContain("`SVC_WALKER_URL` | `http://127.0.0.1:18085`");
    expect(text).toContain("`SVC_NOTIFIER_URL` | `http://127.0.0.1:18084`");
  });

  it("names as readers exactly the services whose config.ts reads each setting", () => {
    const problems: string[] = [];
    for (const service of SERVICE_NAMES) {
      const named = fieldsNamedBy(service);
      if (named === undefined) continue;
      if (named.size === 0) problems.push(`services/${service}/src/config.ts names no setting this test can read; teach fieldsNamedBy where its settings are`);
      for (const field of FIELDS) {
        const readBy = SETTINGS[field].readBy;
        if (readBy === "every") continue;
        const catalogued = readBy.includes(service);
        if (named.has(field) && !catalogued) problems.push(`${service} reads ${SETTINGS[field].name}, but its readBy in settings.ts leaves ${service} out`);
        if (!named.has(field) && catalogued) problems.push(`${SETTINGS[field].name} says ${service} reads it, but services/${service}/src/config.ts does not`);
      }
    }
    expect(problems).toEqual([]);
  });
});
