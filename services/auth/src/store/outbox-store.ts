import { sql, type Kysely, type Transaction } from "kysely";
import type { CredentialChanged } from "@svc/contracts";
import { SCHEMA, type AuthDatabase } from "./schema.js";

type Db = Kysely<AuthDatabase> | Transaction<AuthDatabase>;

/**
 * Credential-change announcements waiting for NATS. A row is written in the transaction of the
 * change it announces and deleted as soon as JetStream has the event: nothing reads a sent one.
 */
export function outboxStoreFactory(root: Kysely<AuthDatabase>) {
  const db = (tx?: Db) => (tx ?? root).withSchema(SCHEMA);
  return {
    async add(event: CredentialChanged, tx?: Db): Promise<void> {
      await db(tx).insertInto("outbox").values({ id: event.id, event: JSON.stringify(event) }).execute();
    },

    async remove(ids: string[]): Promise<void> {
      if (ids.length > 0) await db().deleteFrom("outbox").where("id", "in", ids).execute();
    },

    /**
     * Runs `fn` over the oldest waiting events older than `minAgeMs`, locked so that another
     * auth replica's relay skips them meanwhile; `fn` returns the ids NATS took, which go.
     */
    async drain(minAgeMs: number, limit: number, fn: (events: CredentialChanged[]) => Promise<string[]>): Promise<number> {
      return root.transaction().execute(async (tx) => {
        const rows = await db(tx)
          .selectFrom("outbox")
          .select(["id", "event"])
          .where("created_at", "<", new Date(Date.now() - minAgeMs))
          .orderBy("seq")
          .limit(limit)
          .forUpdate()
          .skipLocked()
          .execute();
        if (rows.length === 0) return 0;
        const sent = await fn(rows.map((r) => r.event));
        const failed = rows.filter((r) => !sent.includes(r.id)).map((r) => r.id);
        if (sent.length) await db(tx).deleteFrom("outbox").where("id", "in", sent).execute();
        if (failed.length) await db(tx).updateTable("outbox").set({ attempts: sql`attempts + 1` }).where("id", "in", failed).execute();
        return sent.length;
      });
    },
  };
}

export type OutboxStore = ReturnType<typeof outboxStoreFactory>;
