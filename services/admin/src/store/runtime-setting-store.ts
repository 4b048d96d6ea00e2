import type { Kysely } from "kysely";
import type { SettingChangeRow as SettingChange } from "@svc/contracts";
import { SCHEMA, type AdminDatabase } from "./schema.js";

/** Run-time settings' stored values and the record of every change. */
export function runtimeSettingStoreFactory(root: Kysely<AdminDatabase>) {
  const db = () => root.withSchema(SCHEMA);
  return {
    /** Every stored value, by setting name (`svc.rate-limit`). */
    async load(): Promise<Map<string, string>> {
      const rows = await db().selectFrom("runtime_settings").select(["name", "value"]).execute();
      return new Map(rows.map((r) => [r.name, r.value]));
    },
    /** Stores a value and records the change in one transaction; `recorded` is what the record keeps of the values (null for a secret). */
    async set(name: string, value: string, recorded: { oldValue: string | null; newValue: string | null }, principal: string): Promise<void> {
      const now = new Date();
      await root.transaction().execute(async (trx) => {
        const t = trx.withSchema(SCHEMA);
        await t
          .insertInto("runtime_settings")
          .values({ name, value, updated_at: now })
          .onConflict((oc) => oc.column("name").doUpdateSet({ value, updated_at: now }))
          .execute();
        await t.insertInto("setting_changes").values({ name, old_value: recorded.oldValue, new_value: recorded.newValue, principal, changed_at: now }).execute();
      });
    },
    /** Every per-tenant override: tenant -> setting name -> text. */
    async loadTenants(): Promise<Map<string, Map<string, string>>> {
      const rows = await db().selectFrom("tenant_settings").select(["tenant", "name", "value"]).orderBy("tenant").execute();
      const out = new Map<string, Map<string, string>>();
      for (const r of rows) {
        let mine = out.get(r.tenant);
        if (!mine) out.set(r.tenant, (mine = new Map()));
        mine.set(r.name, r.value);
      }
      return out;
    },
    /**
     * Stores (value) or removes (null) a tenant's override and records the change in one
     * transaction; answers false when there was nothing to remove.
     */
    async setForTenant(tenant: string, name: string, value: string | null, recorded: { oldValue: string | null; newValue: string | null }, principal: string): Promise<boolean> {
      const now = new Date();
      return root.transaction().execute(async (trx) => {
        const t = trx.withSchema(SCHEMA);
        if (value === null) {
          const gone = await t.deleteFrom("tenant_settings").where("tenant", "=", tenant).where("name", "=", name).executeTakeFirst();
          if (gone.numDeletedRows === 0n) return false;
        } else {
          await t
            .insertInto("tenant_settings")
            .values({ tenant, name, value, updated_at: now })
            .onConflict((oc) => oc.columns(["tenant", "name"]).doUpdateSet({ value, updated_at: now }))
            .execute();
        }
        await t.insertInto("setting_changes").values({ name, tenant, old_value: recorded.oldValue, new_value: recorded.newValue, principal, changed_at: now }).execute();
        return true;
      });
    },
    /** Changes, newest first; `after` is the id of the last change of the previous page. */
    async changes(page: { after?: string; limit: number }): Promise<SettingChange[]> {
      let q = db().selectFrom("setting_changes").selectAll().orderBy("id", "desc").limit(page.limit);
      if (page.after !== undefined) q = q.where("id", "<", page.after);
      const rows = await q.execute();
      return rows.map((r) => ({ id: String(r.id), name: r.name, oldValue: r.old_value, newValue: r.new_value, ...(r.tenant === null ? {} : { tenant: r.tenant }), principal: r.principal, at: r.changed_at.toISOString() }));
    },
  };
}
export type RuntimeSettingStore = ReturnType<typeof runtimeSettingStoreFactory>;
