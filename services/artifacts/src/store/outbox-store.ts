import { sql } from "kysely";
import type { ArtifactEvent } from "@svc/contracts";
import type { Db } from "./metadata-store.js";
import { SCHEMA } from "./schema.js";

export interface OutboxRow {
  id: string;
  event: ArtifactEvent;
}

/** The outbox table: written inside the change's transaction, drained by the relay. */
export function outboxStoreFactory(root: Db) {
  const db = (tx?: Db) => (tx ?? root).withSchema(SCHEMA);
  return {
    async add(tx: Db, event: ArtifactEvent): Promise<void> {
      await db(tx).insertInto("outbox").values({ id: event.id, kind: event.kind, event: JSON.stringify(event) }).execute();
    },

    async markSent(ids: string[], tx?: Db): Promise<void> {
      if (ids.length === 0) return;
      await db(tx).updateTable("outbox").set({ sent_at: new Date() }).where("id", "in", ids).where("sent_at", "is", null).execute();
    },

    /**
     * Runs `fn` over the oldest unsent events older than `minAgeMs`, locked so that another
     * replica's relay skips them meanwhile; `fn` returns the ids it delivered.
     */
    async drain(minAgeMs: number, limit: number, fn: (rows: OutboxRow[]) => Promise<string[]>): Promise<number> {
      return root.transaction().execute(async (tx) => {
        const rows = await db(tx)
          .selectFrom("outbox")
          .select(["id", "event"])
          .where("sent_at", "is", null)
          .where("created_at", "<", new Date(Date.now() - minAgeMs))
          .orderBy("seq")
          .limit(limit)
          .forUpdate()
          .skipLocked()
          .execute();
        if (rows.length === 0) return 0;
        const sent = await fn(rows as OutboxRow[]);
        const failed = rows.filter((r) => !sent.includes(r.id)).map((r) => r.id);
        if (sent.length) await db(tx).updateTable("outbox").set({ sent_at: new Date() }).where("id", "in", sent).execute();
        if (failed.length) await db(tx).updateTable("outbox").set({ attempts: sql`attempts + 1` }).where("id", "in", failed).execute();
        return sent.length;
      });
    },

    async unsentCount(): Promise<number> {
      const r = await db().selectFrom("outbox").select((eb) => eb.fn.countAll<string>().as("n")).where("sent_at", "is", null).executeTakeFirstOrThrow();
      return Number(r.n);
    },

    /** Sent events are kept a while for inspection, then dropped. */
    async prune(olderThanMs: number): Promise<number> {
      const r = await db().deleteFrom("outbox").where("sent_at", "<", new Date(Date.now() - olderThanMs)).executeTakeFirst();
      return Number(r.numDeletedRows);
    },
  };
}
export type OutboxStore = ReturnType<typeof outboxStoreFactory>;
