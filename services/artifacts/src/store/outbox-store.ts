import { sql } from "kysely";
import pg from "pg";
import type { ArtifactEvent } from "@svc/contracts";
import type { Db } from "./metadata-store.js";
import { SCHEMA } from "./schema.js";

export interface OutboxRow {
  id: string;
  event: ArtifactEvent;
}

const { escapeIdentifier, escapeLiteral } = pg;

/** The outbox table: written inside the change's transaction, drained by the relay. */
export function outboxStoreFactory(root: Db) {
  const db = (tx?: Db) => (tx ?? root).withSchema(SCHEMA);
  return {
    /**
     * An event's row, written in the change's transaction: one statement with its values quoted
     * in (pg's escaping), sent with the transaction's COMMIT (metadata-store.ts lockedTransaction).
     */
    addStatement(event: ArtifactEvent): string {
      return `insert into ${escapeIdentifier(SCHEMA)}.outbox (id, kind, event) values (${escapeLiteral(event.id)}, ${escapeLiteral(event.kind)}, ${escapeLiteral(JSON.stringify(event))})`;
    },

    /**
     * Forgets events JetStream has stored: nothing reads a sent event again (the stream is the
     * record; consumers catch up from it), so a row lives only until its event is delivered.
     */
    async markSent(ids: string[], tx?: Db): Promise<void> {
      if (ids.length === 0) return;
      await db(tx).deleteFrom("outbox").where("id", "in", ids).execute();
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
        if (sent.length) await db(tx).deleteFrom("outbox").where("id", "in", sent).execute();
        if (failed.length) await db(tx).updateTable("outbox").set({ attempts: sql`attempts + 1` }).where("id", "in", failed).execute();
        return sent.length;
      });
    },

    async unsentCount(): Promise<number> {
      const r = await db().selectFrom("outbox").select((eb) => eb.fn.countAll<string>().as("n")).where("sent_at", "is", null).executeTakeFirstOrThrow();
      return Number(r.n);
    },

    /** Drops rows marked sent by a version that kept them (for 7 days) instead of deleting them. */
    async prune(): Promise<number> {
      const r = await db().deleteFrom("outbox").where("sent_at", "is not", null).executeTakeFirst();
      return Number(r.numDeletedRows);
    },
  };
}
export type OutboxStore = ReturnType<typeof outboxStoreFactory>;
