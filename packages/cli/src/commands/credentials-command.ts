import { usageError } from "../cli-errors.js";
import { str, list, type Command, type CommandContext } from "../command-types.js";
import { GRANT_ARGS, GRANT_HELP, grantBody, grantExpiresOption, grantsCell, parseGrantSpec, scopeSegment, type Grant } from "../grant-specs.js";
import { readListed, pagingOptions } from "../paged-list.js";
import { emit, renderFields, renderTable, when } from "../table-output.js";

interface Credential {
  id: string;
  label: string | null;
  created: string;
  expires: string | null;
  state: string;
  /** The server's mark (active, expiring within 14 days); absent from servers older than it. */
  expiringSoon?: boolean;
  revoked: string | null;
  allowedAddresses: string[];
  grants: Grant[];
  lastUsed: string | null;
  lastUsedFrom: string | null;
  useCount: number;
}

interface Minted {
  id: string;
  key: string;
  label: string | null;
  created: string;
  expires: string | null;
}

/** Keys that lapse within this window are marked in listings: a key expiring unnoticed breaks builds. */
export const EXPIRING_WITHIN_MS = 14 * 86_400_000;
/** The same window as the server's `expiring` filter takes it. */
const EXPIRING_WITHIN = "P14D";

/** The server's mark; computed here only for a server that does not send it. */
export const expiringSoon = (c: Pick<Credential, "expires" | "state" | "expiringSoon">, now = Date.now()): boolean => {
  if (c.expiringSoon !== undefined) return c.expiringSoon;
  if (c.state !== "active" || !c.expires) return false;
  const left = Date.parse(c.expires) - now;
  return left > 0 && left <= EXPIRING_WITHIN_MS;
};

const ID = /^[0-9a-f]{64}$/;
function credentialId(ctx: CommandContext): string {
  const id = ctx.args[0] ?? "";
  if (!ID.test(id)) throw usageError(`"${id}" is not a key id: an id is the 64-character hash \`svc credentials list\` shows.`);
  return id;
}

const path = (id: string, rest = "") => `/api/credentials/${id}${rest}`;

function showCredential(ctx: CommandContext, c: Credential): void {
  emit(ctx.out, { ...c, expiringSoon: expiringSoon(c) }, (v) =>
    renderFields([
      ["id", v.id],
      ["label", v.label ?? "-"],
      ["state", v.state],
      ["created", when(v.created)],
      ["expires", `${when(v.expires)}${v.expiringSoon ? "  EXPIRING SOON" : ""}`],
      ["allowed addresses", v.allowedAddresses.join(", ") || "any"],
      ["grants", grantsCell(v.grants)],
      ["last used", v.lastUsed ? `${when(v.lastUsed)} from ${v.lastUsedFrom ?? "?"}, ${v.useCount} uses` : "-"],
    ]),
  );
}

function showMinted(ctx: CommandContext, m: Minted & { grants?: Grant[] }): void {
  emit(ctx.out, m, (v) =>
    renderFields([
      ["id", v.id],
      ["key", v.key],
      ["label", v.label ?? "-"],
      ["expires", when(v.expires)],
      ...(v.grants ? [["grants", grantsCell(v.grants)] as [string, string]] : []),
    ]),
  );
  ctx.out.note("The key is shown this once: keep it in a secret store now. Only its id is kept by the server.");
}

export const credentialsCommand: Command = {
  name: "credentials",
  summary: "keys: mint, list, show, grant, revoke a grant, revoke, rotate, expiry, allowed addresses",
  subcommands: [
    {
      name: "list",
      summary: "one page of keys (500 at most), or every key with --all; keys expiring within 14 days are marked SOON",
      maxArgs: 0,
      options: { ...pagingOptions, expiring: { type: "boolean", description: "only active keys expiring within 14 days (filtered by the server, paged like the full list)" } },
      examples: ["svc credentials list", "svc credentials list --expiring", "svc credentials list --all --json"],
      async run(ctx) {
        const expiring = ctx.values.expiring === true;
        const filter: Record<string, string> = expiring ? { expiring: EXPIRING_WITHIN } : {};
        const items = await readListed<Credential>(ctx, "/api/credentials", `svc credentials list${expiring ? " --expiring" : ""}`, false, filter);
        const now = Date.now();
        const rows = items.map((c) => ({ ...c, expiringSoon: expiringSoon(c, now) }));
        emit(ctx.out, rows, (r) =>
          renderTable(r, [
            { header: "ID", cell: (c) => c.id },
            { header: "LABEL", cell: (c) => c.label ?? "-" },
            { header: "STATE", cell: (c) => c.state },
            { header: "SOON", cell: (c) => (c.expiringSoon ? "yes" : "") },
            { header: "EXPIRES", cell: (c) => when(c.expires, now) },
            { header: "GRANTS", cell: (c) => grantsCell(c.grants) },
          ]),
        );
      },
    },
    {
      name: "mint",
      summary: "issue a new key, optionally with grants; the key is printed once",
      maxArgs: 0,
      options: {
        label: { type: "string", value: "text", description: "free text naming the key's holder" },
        expires: { type: "string", value: "when", description: "ISO-8601 duration from now (P30D) or instant; default the server's (90 days)" },
        "non-expiring": { type: "boolean", description: "a key that never expires" },
        grant: { type: "string", multiple: true, value: "scope=tokens", description: `a grant to give it at once (repeatable); ${GRANT_HELP}` },
      },
      examples: ["svc credentials mint --label ci --grant default:com/acme=deploy --expires P30D"],
      async run(ctx) {
        const grants = list(ctx.values.grant).map(parseGrantSpec);
        const api = await ctx.api();
        const minted = await api.json<Minted>("POST", "/api/credentials", {
          body: { label: str(ctx.values.label), expires: str(ctx.values.expires), nonExpiring: ctx.values["non-expiring"] === true ? true : undefined },
        });
        const given: Grant[] = [];
        for (const g of grants) given.push(await api.json<Grant>("POST", path(minted.id, "/grants"), { body: g }));
        showMinted(ctx, grants.length ? { ...minted, grants: given } : minted);
      },
    },
    {
      name: "show",
      args: "<id>",
      minArgs: 1,
      maxArgs: 1,
      summary: "one key: state, expiry, allowed addresses, grants, last use",
      examples: ["svc credentials show 3f2a…(64 hex)"],
      async run(ctx) {
        const id = credentialId(ctx);
        showCredential(ctx, await (await ctx.api()).json<Credential>("GET", path(id)));
      },
    },
    {
      name: "grant",
      args: `<id> ${GRANT_ARGS}`,
      minArgs: 3,
      summary: "set the key's rights at one scope",
      detail: GRANT_HELP,
      options: grantExpiresOption,
      examples: ["svc credentials grant <id> default:com/acme deploy", "svc credentials grant <id> '*' manage:read --expires P7D"],
      async run(ctx) {
        const id = credentialId(ctx);
        const g = await (await ctx.api()).json<Grant>("POST", path(id, "/grants"), { body: grantBody(ctx.args.slice(1), str(ctx.values.expires)) });
        emit(ctx.out, g, (v) => `granted ${grantsCell([v])} to ${id}`);
      },
    },
    {
      name: "revoke-grant",
      args: "<id> <scope>",
      minArgs: 2,
      maxArgs: 2,
      summary: "remove the key's rights at one scope",
      examples: ["svc credentials revoke-grant <id> default:com/acme"],
      async run(ctx) {
        const id = credentialId(ctx);
        await (await ctx.api()).request("DELETE", path(id, `/grants/${scopeSegment(ctx.args[1]!)}`));
        emit(ctx.out, { id, scope: ctx.args[1], removed: true }, (v) => `removed the grant at ${v.scope} from ${id}`);
      },
    },
    {
      name: "revoke",
      args: "<id>",
      minArgs: 1,
      maxArgs: 1,
      summary: "revoke the key: it stops working at once",
      examples: ["svc credentials revoke <id>"],
      async run(ctx) {
        const id = credentialId(ctx);
        await (await ctx.api()).request("DELETE", path(id));
        emit(ctx.out, { id, revoked: true }, () => `revoked ${id}`);
      },
    },
    {
      name: "rotate",
      args: "<id>",
      minArgs: 1,
      maxArgs: 1,
      summary: "issue a successor with the same grants and allowed addresses; the old key expires after the overlap",
      options: { overlap: { type: "string", value: "duration", description: "how long the old key keeps working (ISO-8601, default P7D)" } },
      examples: ["svc credentials rotate <id> --overlap P1D"],
      async run(ctx) {
        const id = credentialId(ctx);
        const overlap = str(ctx.values.overlap);
        showMinted(ctx, await (await ctx.api()).json<Minted>("POST", path(id, "/rotate"), { body: overlap ? { overlap } : {} }));
      },
    },
    {
      name: "expiry",
      args: "<id> [<when>]",
      minArgs: 1,
      maxArgs: 2,
      summary: "change when the key expires (a duration from now or an instant), or --clear it",
      options: { clear: { type: "boolean", description: "remove the expiry" } },
      examples: ["svc credentials expiry <id> P30D", "svc credentials expiry <id> 2030-01-01T00:00:00Z", "svc credentials expiry <id> --clear"],
      async run(ctx) {
        const id = credentialId(ctx);
        const expires = ctx.values.clear === true ? null : ctx.args[1];
        if (expires === undefined) throw usageError("Give the new expiry (P30D, an instant) or --clear.");
        showCredential(ctx, await (await ctx.api()).json<Credential>("PUT", path(id, "/expiry"), { body: { expires } }));
      },
    },
    {
      name: "allowed-addresses",
      args: "<id> [<address or CIDR>...]",
      minArgs: 1,
      summary: "restrict the source addresses the key works from, or --clear the restriction",
      options: { clear: { type: "boolean", description: "the key works from any address" } },
      examples: ["svc credentials allowed-addresses <id> 10.0.0.0/8 192.168.1.7", "svc credentials allowed-addresses <id> --clear"],
      async run(ctx) {
        const id = credentialId(ctx);
        const addresses = ctx.values.clear === true ? null : ctx.args.slice(1).flatMap((a) => a.split(",")).filter(Boolean);
        if (addresses !== null && addresses.length === 0) throw usageError("Give one or more addresses or CIDRs, or --clear.");
        showCredential(ctx, await (await ctx.api()).json<Credential>("PUT", path(id, "/allowed-ips"), { body: { addresses } }));
      },
    },
  ],
};
