import { sql, type Kysely } from "kysely";
import type { NodeReading, Sample, SampleStore } from "../domain/meter-sampling.js";
import { SCHEMA, type AdminDatabase } from "./schema.js";

export interface RecentPublish {
  id: string;
  time: Date;
  repository: string;
  path: string;
  size: number;
  /** `key:<id>`, `person:<id>`, `anonymous`, `system:<service>`. */
  actor: string;
}

/** The sampled meters (meter_samples, each naming the admin node `self` that took it) and the recent publishes (recent_publishes), both kept for svc.metrics.history. */
export function meterSampleStoreFactory(root: Kysely<AdminDatabase>, self: string) {
  const db = () => root.withSchema(SCHEMA);
  return {
    async has(slot: Date): Promise<boolean> {
      return (await db().selectFrom("meter_samples").select("slot").where("slot", "=", slot).executeTakeFirst()) !== undefined;
    },
    async add(s: Sample): Promise<boolean> {
      const r = await db()
        .insertInto("meter_samples")
        .values({ slot: s.slot, taken_at: s.takenAt, taken_by: self, nodes: JSON.stringify(s.nodes), storage_bytes: s.storageBytes })
        .onConflict((oc) => oc.column("slot").doNothing())
        .executeTakeFirst();
      return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
    },
    async prune(before: Date): Promise<void> {
      await db().deleteFrom("meter_samples").where("slot", "<", before).execute();
      await db().deleteFrom("recent_publishes").where("published_at", "<", before).execute();
    },
    /** The samples from `from` on, in slot order, with the one before `from` (the baseline of the first). */
    async since(from: Date): Promise<Sample[]> {
      const rows = await db()
        .selectFrom("meter_samples")
        .selectAll()
        .where((eb) => eb.or([eb("slot", ">=", from), eb("slot", "=", eb.selectFrom("meter_samples").select(sql<Date>`max(slot)`.as("m")).where("slot", "<", from))]))
        .orderBy("slot")
        .execute();
      return rows.map((r) => ({
        slot: r.slot,
        takenAt: r.taken_at,
        nodes: r.nodes as Record<string, NodeReading>,
        storageBytes: r.storage_bytes === null ? null : Number(r.storage_bytes),
      }));
    },
    /** Records a publish once, however many admin nodes heard it. */
    async addPublish(p: RecentPublish): Promise<void> {
      await db()
        .insertInto("recent_publishes")
        .values({ id: p.id, published_at: p.time, repository: p.repository, path: p.path, size: p.size, actor: p.actor })
        .onConflict((oc) => oc.column("id").doNothing())
        .execute();
    },
    async publishes(limit: number): Promise<RecentPublish[]> {
      const rows = await db().selectFrom("recent_publishes").selectAll().orderBy("published_at", "desc").orderBy("id").limit(limit).execute();
      return rows.map((r) => ({ id: r.id, time: r.published_at, repository: r.repository, path: r.path, size: Number(r.size), actor: r.actor }));
    },
  };
}
export type MeterSampleStore = ReturnType<typeof meterSampleStoreFactory> & SampleStore;
