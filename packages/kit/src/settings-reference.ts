import { DEPLOYMENT_SETTINGS, SERVICE_NAMES, SETTINGS, envName, type SettingDef } from "./settings.js";

/**
 * Renders docs/configuration/settings.md from the SETTINGS catalog, so the reference cannot
 * drift from what the loader accepts: `npm run docs:settings` writes it, and a unit test fails
 * when the committed file differs from this text.
 */
export const SETTINGS_REFERENCE_PATH = "docs/configuration/settings.md";

const cell = (text: string): string => text.replace(/\|/g, "\\|").replace(/\n/g, " ");

function defaultOf(d: SettingDef<unknown>): string {
  if (d.defaultText !== undefined) return /^\S+$/.test(d.defaultText) && d.defaultText !== "required" ? `\`${d.defaultText}\`` : d.defaultText;
  const v = d.default;
  if (v === undefined || v === "" || (Array.isArray(v) && v.length === 0)) return "blank";
  return `\`${String(v)}\``;
}

function readersOf(d: SettingDef<unknown>): string {
  if (d.readBy === "every") return "every service (the loader)";
  if (SERVICE_NAMES.every((s) => d.readBy.includes(s))) return "every service";
  return SERVICE_NAMES.filter((s) => d.readBy.includes(s)).join(", ");
}

export function renderSettingsReference(): string {
  const deploymentWide = new Set<string>(DEPLOYMENT_SETTINGS.map((f) => SETTINGS[f].name));
  const rows = (Object.values(SETTINGS) as SettingDef<unknown>[]).map((d) => {
    const marks = [d.secret ? "secret" : "", deploymentWide.has(d.name) ? "deployment-wide" : ""].filter((m) => m !== "");
    const name = `\`${d.name}\`${marks.length > 0 ? ` (${marks.join(", ")})` : ""}`;
    return `| ${name} | \`${envName(d.name)}\` | ${cell(defaultOf(d))} | ${readersOf(d)} | ${cell(d.description)} |`;
  });
  return [
    "# Settings reference",
    "",
    "<!-- Generated from SETTINGS in packages/kit/src/settings.ts by `npm run docs:settings`; do not edit by hand. A unit test fails when this file differs from the catalog. -->",
    "",
    "Every setting the services accept, in the order of the catalog. How a value is found (`-D` argument,",
    "environment variable, properties file, default) and how durations are written: [Configuration](README.md).",
    "",
    "- **read by**: the services that act on the setting. Every service also announces a digest of each",
    "  *deployment-wide* setting (never its value) in its heartbeat, and the admin service raises",
    "  `svc.nodes.settings-differ` when a node differs from the others.",
    "- **secret**: never logged, echoed in an error or announced; keep it in a secret store.",
    "- **required**: the services that read it refuse to start without it.",
    "",
    "| setting | environment variable | default | read by | description |",
    "|---|---|---|---|---|",
    ...rows,
    "",
  ].join("\n");
}
