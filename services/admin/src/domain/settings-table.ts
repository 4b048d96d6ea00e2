import type { SettingRow, SettingsTable } from "@svc/contracts";
import { SETTINGS, SERVICE_NAMES, envName, type SettingDef, type SettingsReply } from "@svc/kit";

/**
 * Lines up what each node reported (kit's settings-in-force.ts) setting by setting, in the
 * catalog's order; a setting no node reports (read by no running service) is left out unless
 * `always` keeps it. The
 * digests decide agreement and stay here: the answer carries a secret only as set or not set.
 */
export function settingsTable(replies: readonly SettingsReply[], always: (name: string) => boolean = () => false): SettingsTable {
  const sorted = [...replies].sort((a, b) => (a.service < b.service ? -1 : a.service > b.service ? 1 : a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  const settings: SettingRow[] = [];
  for (const d of Object.values(SETTINGS) as SettingDef<unknown>[]) {
    const reports = sorted.flatMap((r) => r.settings.filter((s) => s.name === d.name).map((s) => ({ r, s })));
    // A setting no node that answered reads is left out, unless `always` keeps it (a run-time
    // setting is changed here whichever nodes answered in time: its row is always there).
    if (reports.length === 0 && !always(d.name)) continue;
    settings.push({
      name: d.name,
      environment: envName(d.name),
      description: d.description,
      secret: d.secret === true,
      readBy: d.readBy === "every" ? [...SERVICE_NAMES] : [...d.readBy],
      // A process's own host, port and the like differ by nature: not a disagreement.
      agree: d.perProcess === true || new Set(reports.map(({ s }) => s.digest)).size <= 1,
      ...(d.perProcess ? { perProcess: true } : {}),
      nodes: reports.map(({ r, s }) => ({ node: r.node, service: r.service, from: s.from, set: s.set, ...(d.secret || s.value === undefined ? {} : { value: s.value }) })),
    });
  }
  return { nodes: sorted.map((r) => ({ node: r.node, service: r.service })), settings };
}
