import { sql, type Kysely, type Selectable, type Transaction } from "kysely";
import { SCHEMA, type DeliveryState, type DeliveryTable, type NotifierDatabase } from "./schema.js";

export type DeliveryRow = Selectable<DeliveryTable> & { kind: string };
export type ClaimedDelivery = Selectable<DeliveryTable> & { payload: string; kind: string; event_time: Date };
type Db = Kysely<NotifierDatabase> | Transaction<NotifierDatabase>;

export type AttemptRecord =
  | { state: "delivered"; status: number }
  | { state: "pending"; status: number | null; error: string; retryInMs: number }
  | { state: "set-aside"; status: number | null; error: string };

/** Kysely access to the notifier schema; every method takes an optional transaction. */
export function deliveryStoreFactory(root: Kysely<NotifierDatabase>) {
  const db = (tx?: Db) => (tx ?? root).withSchema(SCHEMA);
  const deliveries = sql.table(`${SCHEMA}.deliveries`);
  const events = sql.table(`${SCHEMA}.events`);

  return {
    /**
     * Records an event and one pending delivery per endpoint in one transaction. A redelivered
     * event adds nothing: the event id is the key of the event and, with the endpoint, of each
     * delivery. Answers how many deliveries are new.
     */
    async recordEvent(event: { id: string; kind: string; time: Date; payload: string }, endpoints: readonly string[]): Promise<number> {
      if (endpoints.length === 0) return 0;
      return root.transaction().execute(async (tx) => {
        await db(tx).insertInto("events").values(event).onConflict((oc) => oc.column("id").doNothing()).execute();
        const rows = await db(tx)
          .insertInto("deliveries")
          .values(endpoints.map((endpoint) => ({ event_id: event.id, endpoint })))
          .onConflict((oc) => oc.columns(["event_id", "endpoint"]).doNothing())
          .returning("id")
          .execute();
        return rows.length;
      });
    },

    /**
     * Takes the next due delivery of one endpoint for `leaseMs`. SKIP LOCKED lets several
     * notifiers share the table; a lease that passes (its holder died) frees the row again.
     */
    async claim(endpoint: string, leaseMs: number, token: string, tx?: Db): Promise<ClaimedDelivery | undefined> {
      const r = await sql<ClaimedDelivery>`
        with next as (
          select id from ${deliveries}
           where endpoint = ${endpoint} and state = 'pending' and next_attempt_at <= now()
             and (lease_until is null or lease_until < now())
           order by next_attempt_at, id
           limit 1
           for update skip locked)
        update ${deliveries} d
           set lease_until = now() + make_interval(secs => ${leaseMs / 1000}), lease_token = ${token}
          from next, ${events} e
         where d.id = next.id and e.id = d.event_id
        returning d.*, e.payload, e.kind, e.time as event_time`.execute(tx ?? root);
      return r.rows[0];
    },

    /** Writes the outcome of an attempt, if the lease is still this worker's. */
    async recordAttempt(id: string, token: string, rec: AttemptRecord, tx?: Db): Promise<boolean> {
      const now = new Date();
      const r = await db(tx)
        .updateTable("deliveries")
        .set((eb) => ({
          state: rec.state,
          attempts: eb("attempts", "+", 1),
          round_attempts: eb("round_attempts", "+", 1),
          last_status: rec.status,
          last_error: rec.state === "delivered" ? null : rec.error,
          // The database's clock decides when a delivery is due, for every notifier alike.
          next_attempt_at: rec.state === "pending" ? sql<Date>`now() + make_interval(secs => ${rec.retryInMs / 1000})` : eb.ref("next_attempt_at"),
          delivered_at: rec.state === "delivered" ? now : eb.ref("delivered_at"),
          lease_until: null,
          lease_token: null,
          updated_at: now,
        }))
        .where("id", "=", id)
        .where("lease_token", "=", token)
        .executeTakeFirst();
      return Number(r.numUpdatedRows) === 1;
    },

    /** Gives a claimed delivery back untried (shutting down mid-attempt). */
    async release(id: string, token: string, tx?: Db): Promise<void> {
      await db(tx).updateTable("deliveries").set({ lease_until: null, lease_token: null }).where("id", "=", id).where("lease_token", "=", token).execute();
    },

    async list(opts: { state?: DeliveryState; endpoint?: string; event?: string; after?: string; limit: number }, tx?: Db): Promise<DeliveryRow[]> {
      let q = db(tx)
        .selectFrom("deliveries as d")
        .innerJoin("events as e", "e.id", "d.event_id")
        .selectAll("d")
        .select("e.kind")
        .orderBy("d.id")
        .limit(opts.limit);
      if (opts.state) q = q.where("d.state", "=", opts.state);
      if (opts.endpoint) q = q.where("d.endpoint", "=", opts.endpoint);
      if (opts.event) q = q.where("d.event_id", "=", opts.event);
      if (opts.after) q = q.where("d.id", ">", opts.after);
      return q.execute();
    },

    async get(id: string, tx?: Db): Promise<DeliveryRow | undefined> {
      return db(tx).selectFrom("deliveries as d").innerJoin("events as e", "e.id", "d.event_id").selectAll("d").select("e.kind").where("d.id", "=", id).executeTakeFirst();
    },

    /** Puts a set-aside delivery back in the queue with a fresh retry budget. */
    async requeue(id: string, tx?: Db): Promise<boolean> {
      const r = await db(tx)
        .updateTable("deliveries")
        .set({ state: "pending", round_attempts: 0, next_attempt_at: new Date(), lease_until: null, lease_token: null, updated_at: new Date() })
        .where("id", "=", id)
        .where("state", "=", "set-aside")
        .executeTakeFirst();
      return Number(r.numUpdatedRows) === 1;
    },

    /**
     * Forgets what finished before `before`: delivered and set-aside deliveries last changed
     * before it, then events received before it that no delivery refers to any more. Pending
     * deliveries and their events are never removed. Works in batches of `batch` rows so no
     * statement holds many locks; answers how many of each went.
     */
    async prune(before: Date, batch = 1000, tx?: Db): Promise<{ deliveries: number; events: number }> {
      let deliveriesGone = 0;
      for (;;) {
        const r = await sql<{ n: string }>`
          with gone as (
            delete from ${deliveries} where id in (
              select id from ${deliveries} where state <> 'pending' and updated_at < ${before} order by updated_at limit ${batch}
            ) returning 1
          ) select count(*) as n from gone`.execute(tx ?? root);
        const n = Number(r.rows[0]?.n ?? 0);
        deliveriesGone += n;
        if (n < batch) break;
      }
      let eventsGone = 0;
      for (;;) {
        const r = await sql<{ n: string }>`
          with gone as (
            delete from ${events} where id in (
              select e.id from ${events} e
              where e.received_at < ${before} and not exists (select 1 from ${deliveries} d where d.event_id = e.id)
              order by e.received_at limit ${batch}
            ) returning 1
          ) select count(*) as n from gone`.execute(tx ?? root);
        const n = Number(r.rows[0]?.n ?? 0);
        eventsGone += n;
        if (n < batch) break;
      }
      return { deliveries: deliveriesGone, events: eventsGone };
    },

    /** Deliveries waiting and set aside (both indexed; delivered ones are only counted by the meters). */
    async countOpen(tx?: Db): Promise<{ pending: number; setAside: number }> {
      const count = async (state: DeliveryState) =>
        Number((await db(tx).selectFrom("deliveries").select((eb) => eb.fn.countAll<string>().as("n")).where("state", "=", state).executeTakeFirst())?.n ?? 0);
      return { pending: await count("pending"), setAside: await count("set-aside") };
    },
  };
}

export type DeliveryStore = ReturnType<typeof deliveryStoreFactory>;
