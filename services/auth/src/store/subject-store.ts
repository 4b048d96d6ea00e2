import type { Kysely, Transaction } from "kysely";
import { SCHEMA, type AuthDatabase } from "./schema.js";

type Db = Kysely<AuthDatabase> | Transaction<AuthDatabase>;

/** People, groups and memberships. Every method takes an optional transaction. */
export function subjectStoreFactory(root: Kysely<AuthDatabase>) {
  const db = (tx?: Db) => (tx ?? root).withSchema(SCHEMA);

  return {
    async ensurePrincipal(id: string, label: string | null | undefined, tx?: Db) {
      const q = db(tx).insertInto("principals").values({ id, label: label ?? null });
      await (label === undefined
        ? q.onConflict((oc) => oc.column("id").doNothing())
        : q.onConflict((oc) => oc.column("id").doUpdateSet({ label: label ?? null }))
      ).execute();
    },
    async findPrincipal(id: string, tx?: Db) {
      return db(tx).selectFrom("principals").selectAll().where("id", "=", id).executeTakeFirst();
    },
    async listPrincipals(opts: { after?: string; limit: number }, tx?: Db) {
      let q = db(tx).selectFrom("principals").selectAll().orderBy("id").limit(opts.limit);
      if (opts.after) q = q.where("id", ">", opts.after);
      return q.execute();
    },
    async removePrincipal(id: string, tx?: Db): Promise<boolean> {
      const r = await db(tx).deleteFrom("principals").where("id", "=", id).executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    },
    async removeAllGrants(kind: "person" | "group", id: string, tx?: Db): Promise<number> {
      const r = await db(tx).deleteFrom("grants").where("subject_kind", "=", kind).where("subject_id", "=", id).executeTakeFirst();
      return Number(r.numDeletedRows);
    },

    async ensureGroup(name: string, tx?: Db) {
      await db(tx).insertInto("groups").values({ name, label: null }).onConflict((oc) => oc.column("name").doNothing()).execute();
    },
    async findGroup(name: string, tx?: Db, opts: { forUpdate?: boolean } = {}) {
      let q = db(tx).selectFrom("groups").selectAll().where("name", "=", name);
      if (opts.forUpdate) q = q.forUpdate();
      return q.executeTakeFirst();
    },
    async listGroups(opts: { after?: string; limit: number }, tx?: Db) {
      let q = db(tx).selectFrom("groups").selectAll().orderBy("name").limit(opts.limit);
      if (opts.after) q = q.where("name", ">", opts.after);
      return q.execute();
    },
    async removeGroup(name: string, tx?: Db): Promise<boolean> {
      const r = await db(tx).deleteFrom("groups").where("name", "=", name).executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    },

    /** true when the person was not a member before. */
    async addMember(group: string, principal: string, tx?: Db): Promise<boolean> {
      const r = await db(tx)
        .insertInto("memberships")
        .values({ group_name: group, principal_id: principal })
        .onConflict((oc) => oc.columns(["group_name", "principal_id"]).doNothing())
        .executeTakeFirst();
      return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
    },
    async removeMember(group: string, principal: string, tx?: Db): Promise<boolean> {
      const r = await db(tx).deleteFrom("memberships").where("group_name", "=", group).where("principal_id", "=", principal).executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    },
    async members(group: string, opts: { after?: string; limit: number }, tx?: Db): Promise<string[]> {
      let q = db(tx).selectFrom("memberships").select("principal_id").where("group_name", "=", group).orderBy("principal_id").limit(opts.limit);
      if (opts.after) q = q.where("principal_id", ">", opts.after);
      return (await q.execute()).map((r) => r.principal_id);
    },
    async groupsOf(principal: string, tx?: Db): Promise<string[]> {
      return (await db(tx).selectFrom("memberships").select("group_name").where("principal_id", "=", principal).orderBy("group_name").execute()).map((r) => r.group_name);
    },
    async memberCounts(groups: string[], tx?: Db): Promise<Map<string, number>> {
      if (groups.length === 0) return new Map();
      const rows = await db(tx)
        .selectFrom("memberships")
        .select(["group_name", (eb) => eb.fn.countAll<string>().as("n")])
        .where("group_name", "in", groups)
        .groupBy("group_name")
        .execute();
      return new Map(rows.map((r) => [r.group_name, Number(r.n)]));
    },
  };
}

export type SubjectStore = ReturnType<typeof subjectStoreFactory>;
