import { str, type CommandContext, type OptionSpec } from "./command-types.js";

export const pagingOptions: Record<string, OptionSpec> = {
  limit: { type: "string", value: "n", description: "items per page (1-500, default 500)" },
  after: { type: "string", value: "cursor", description: "the page after this cursor (printed when more remain)" },
  all: { type: "boolean", description: "every page" },
};

/**
 * One page of a paged list as --limit and --after ask, or every page with --all (or `everything`).
 * When more remain, says on standard error how to ask for the next page. `filter`: query
 * parameters the server filters by, sent with every page.
 */
export async function readListed<T>(
  ctx: CommandContext,
  path: string,
  nextCommand: string,
  everything = false,
  filter: Record<string, string | undefined> = {},
  pick?: (body: unknown) => T[],
): Promise<T[]> {
  const api = await ctx.api();
  if (everything || ctx.values.all === true) return api.all<T>(path, filter, pick);
  const { items, next } = await api.page<T>(path, { ...filter, limit: str(ctx.values.limit), after: str(ctx.values.after) }, pick);
  if (next) ctx.out.note(`More remain: ${nextCommand} --after ${next}`);
  return items;
}
