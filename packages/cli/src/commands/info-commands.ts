import { type Command } from "../command-types.js";
import { grantsCell, type Grant } from "../grant-specs.js";
import { emit, renderFields, renderTable } from "../table-output.js";

interface Advisory {
  name: string;
  severity: string;
  summary: string;
  why: string;
  setting: string;
  remedy: string;
  nodes: string[];
}

interface Me {
  kind: string;
  id: string;
  tenant: string;
  label?: string | null;
  grants: Grant[];
}

interface Cache {
  name: string;
  description?: string;
  ttlSeconds?: number;
  hits?: number;
  misses?: number;
  size?: number;
}

/** GET /api/caches answers the list, bare or as `{caches: [...]}` (as a node's answer may be wrapped). */
const cachesOf = (v: unknown): Cache[] => (Array.isArray(v) ? v : ((v as { caches?: Cache[] } | undefined)?.caches ?? [])) as Cache[];

export const postureCommand: Command = {
  name: "posture",
  summary: "the security advisories the deployment's configuration raises, most severe first",
  subcommands: [
    {
      name: "",
      maxArgs: 0,
      summary: "list the advisories (exit 0 even when some are raised; --json for scripts)",
      examples: ["svc posture", "svc posture --json"],
      async run(ctx) {
        const p = await (await ctx.api()).json<{ count: number; advisories: Advisory[] }>("GET", "/api/posture");
        emit(ctx.out, p, (v) =>
          v.count === 0
            ? "No advisories: nothing in the configuration weakens the deployment."
            : `${v.count} ${v.count === 1 ? "advisory" : "advisories"}\n\n` +
              v.advisories.map((a) => `${a.severity.toUpperCase()}  ${a.name}: ${a.summary}\n  why: ${a.why}\n  clear it: ${a.remedy} (${a.setting})`).join("\n\n"),
        );
      },
    },
  ],
};

export const capabilitiesCommand: Command = {
  name: "capabilities",
  summary: "what the server offers: whether keys are required, read-only mode, the keyless caller's rights",
  subcommands: [
    {
      name: "",
      maxArgs: 0,
      summary: "show the capabilities",
      examples: ["svc capabilities"],
      async run(ctx) {
        const c = await (await ctx.api()).json<{ auth: boolean; readOnly: boolean; anonymousRights: string | null }>("GET", "/api/capabilities");
        emit(ctx.out, c, (v) =>
          renderFields([
            ["auth", v.auth ? "yes: every request needs a key" : "no: every request is served anonymously"],
            ["read-only", v.readOnly ? "yes: every write is refused" : "no"],
            ["anonymous rights", v.anonymousRights ?? "none"],
          ]),
        );
      },
    },
  ],
};

export const whoamiCommand: Command = {
  name: "whoami",
  summary: "who the key (or session) is: kind, id, tenant, label and every grant it holds, with where it comes from",
  subcommands: [
    {
      name: "",
      maxArgs: 0,
      summary: "show the caller and its grants",
      examples: ["svc whoami"],
      async run(ctx) {
        const me = await (await ctx.api()).json<Me>("GET", "/api/me");
        emit(ctx.out, me, (v) =>
          [
            renderFields([
              ["kind", v.kind],
              ["id", v.id],
              ["tenant", v.tenant],
              ["label", v.label ?? "-"],
            ]),
            "",
            v.grants.length === 0
              ? "No grants: this caller may do nothing yet. Ask an administrator to grant rights to the id above."
              : renderTable(v.grants, [
                  { header: "SCOPE", cell: (g) => g.scope },
                  { header: "RIGHTS", cell: (g) => g.tokens.join(",") },
                  { header: "EXPIRES", cell: (g) => g.expires ?? "never" },
                  { header: "VIA", cell: (g) => g.via ?? "direct" },
                ]),
          ].join("\n"),
        );
      },
    },
  ],
};

export const cachesCommand: Command = {
  name: "caches",
  summary: "the read caches of the gateway node that answers: list, clear",
  subcommands: [
    {
      name: "list",
      maxArgs: 0,
      summary: "each read cache with its time to live, hits, misses and size",
      examples: ["svc caches list"],
      async run(ctx) {
        const caches = cachesOf(await (await ctx.api()).json<unknown>("GET", "/api/caches"));
        emit(ctx.out, caches, (r) =>
          renderTable(r, [
            { header: "NAME", cell: (c) => c.name },
            { header: "TTL", cell: (c) => (c.ttlSeconds === undefined ? "-" : `${c.ttlSeconds}s`) },
            { header: "HITS", cell: (c) => String(c.hits ?? "-") },
            { header: "MISSES", cell: (c) => String(c.misses ?? "-") },
            { header: "SIZE", cell: (c) => String(c.size ?? "-") },
            { header: "DESCRIPTION", cell: (c) => c.description ?? "" },
          ]),
        );
      },
    },
    {
      name: "clear",
      maxArgs: 0,
      summary: "empty this node's caches and tell every other gateway to re-read credentials",
      examples: ["svc caches clear"],
      async run(ctx) {
        const res = await (await ctx.api()).request("POST", "/api/caches/clear", { body: {} });
        const text = await res.text();
        const answer = text ? (JSON.parse(text) as unknown) : { cleared: true };
        emit(ctx.out, answer, () => "Cleared this node's caches; the other gateways were told to drop their credential, person and session caches.");
      },
    },
  ],
};
