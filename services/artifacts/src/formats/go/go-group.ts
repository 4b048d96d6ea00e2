import type { GroupHandler } from "../format.js";
import { compareVersions, latestOf, parseGoPath } from "./go-module.js";
import type { GoRegistry } from "./go-registry.js";
import { goHandler, type GoReads } from "./go-routes.js";

/**
 * The reads of a Go group repository (docs/integration/go.md, "Group repositories"): `@v/list` is
 * every member's versions, `@latest` the newest of them, a version's `.info` and `.mod` the first
 * member's that serves it (a held version is passed over, as its zip is); the zips are the
 * group's file reads (the first member that has the path).
 */
export function goGroupHandler(deps: { registry: GoRegistry }): GroupHandler {
  const { registry } = deps;
  return (req, reply, a, group) => {
    if (a.folder) return undefined;
    const r = parseGoPath(a.path);
    if (r?.kind === "zip") return undefined;
    const served = async (module: string, version: string) => {
      const rows = await group.each(async (m) => {
        const row = await registry.version(m.name, module, version);
        return row && row.held === null ? { member: m.name, row } : undefined;
      });
      return rows.find((x) => x !== undefined);
    };
    const merged: GoReads = {
      async listed(_repository, module) {
        const lists = await group.each((m) => registry.listed(m.name, module));
        return [...new Set(lists.flatMap((l) => l ?? []))].sort(compareVersions);
      },
      async latest(_repository, module) {
        const rows = (await group.each((m) => registry.latest(m.name, module))).filter((x) => x !== undefined);
        const pick = latestOf(rows.map((x) => x.version));
        return rows.find((x) => x.version === pick);
      },
      async version(_repository, module, version) {
        return (await served(module, version))?.row;
      },
      async goMod(_repository, module, version) {
        const found = await served(module, version);
        return found ? registry.goMod(found.member, module, version) : undefined;
      },
    };
    return goHandler({ registry: merged })(req, reply, a);
  };
}
