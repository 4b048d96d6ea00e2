import type { Kysely } from "kysely";
import { SCHEMA, type AdminDatabase } from "./schema.js";

/** Per-tenant rate-limit overrides. */
export function limitStoreFactory(root: Kysely<AdminDatabase>) {
  const db = () => root.withSchema(SCHEMA);
  return {
    async list() {
      return db().selectFrom("rate_limits").selectAll().orderBy("tenant").execute();
    },
    async set(tenant: string, perMinute: number) {
      const now = new Date();
      await db()
        .insertInto("rate_limits")
        .values({ tenant, requests_per_minute: perMinute, updated_at: now })
        .onConflict((oc) => oc.column("tenant").doUpdateSet({ requests_per_minute: perMinute, updated_at: now }))
        .execute();
    },
    async remove(tenant: string): Promise<boolean> {
      const r = await db().deleteFrom("rate_limits").where("tenant", "=", tenant).executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    },
  };
}
export type LimitStore = ReturnType<typeof limitStoreFactory>;
