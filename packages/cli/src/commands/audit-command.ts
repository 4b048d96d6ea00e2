import type { AuditEntryView } from "@svc/contracts";
import { str, type Command } from "../command-types.js";
import { pagingOptions, readListed } from "../paged-list.js";
import { usageError } from "../cli-errors.js";
import { emit, renderTable } from "../table-output.js";

/** The most entries the server answers per page. */
const SERVER_MAX = 500;

const actorText = (a: AuditEntryView["actor"]) => `${a.kind}:${a.id.length > 16 ? `${a.id.slice(0, 12)}…` : a.id}${a.label ? ` (${a.label})` : ""}`;

export const auditCommand: Command = {
  name: "audit",
  summary: "the audit trail: every change made through the API, newest first",
  subcommands: [
    {
      name: "list",
      maxArgs: 0,
      summary: "changes (who, what, when, from which address), newest first, filtered by the server",
      detail: "Needs manage:read on *. Entries are kept for svc.audit-retention (docs/operations/audit-trail.md).",
      options: {
        actor: { type: "string", value: "who", description: "a principal id, part of a key's label, or <kind>:<tenant>:<id>" },
        action: { type: "string", value: "action", description: "an action (key.issue) or its start up to a dot (key)" },
        text: { type: "string", value: "text", description: "text in the object, path, action, key label or request detail" },
        since: { type: "string", value: "instant", description: "entries at or after this date or instant (ISO 8601: 2026-11-29 or 2026-11-29T14:00:00Z)" },
        until: { type: "string", value: "instant", description: "entries before this date or instant (ISO 8601)" },
        ...pagingOptions,
        limit: { type: "string", value: "n", description: "entries per page (1-500, default 50)" },
      },
      examples: ["svc audit list --action key --since 2026-11-01", "svc audit list --actor ci-deploy --json"],
      async run(ctx) {
        const limitText = str(ctx.values.limit);
        if (limitText !== undefined && (!/^\d+$/.test(limitText) || Number(limitText) < 1 || Number(limitText) > SERVER_MAX)) throw usageError(`--limit is a whole number from 1 to ${SERVER_MAX}.`);
        const filter = { actor: str(ctx.values.actor), action: str(ctx.values.action), q: str(ctx.values.text), since: str(ctx.values.since), until: str(ctx.values.until) };
        const entries = await readListed<AuditEntryView>(ctx, "/api/audit", "svc audit list", false, filter, (body) => (body as { entries: AuditEntryView[] }).entries);
        emit(ctx.out, entries, (rows) =>
          renderTable(rows, [
            { header: "AT", cell: (e) => e.at.replace(/\.\d+Z$/, "Z") },
            { header: "ACTOR", cell: (e) => actorText(e.actor) },
            { header: "ACTION", cell: (e) => e.action },
            { header: "OBJECT", cell: (e) => e.object ?? "-" },
            { header: "STATUS", cell: (e) => String(e.status) },
            { header: "ADDRESS", cell: (e) => e.address ?? "-" },
            { header: "SERVICE", cell: (e) => e.service },
          ]),
        );
      },
    },
  ],
};
