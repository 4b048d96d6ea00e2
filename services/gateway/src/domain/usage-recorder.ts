import type { Logger } from "pino";
import type { KeyUsageBatch } from "@svc/contracts";

/**
 * Counts key use in memory and sends it to the auth service in one batch every few seconds,
 * so tracking never adds a database write to a request. A failed batch is kept and merged
 * into the next one.
 */
export function usageRecorderFactory(opts: { send: (batch: KeyUsageBatch) => Promise<void>; log: Logger; intervalMs?: number; maxKeys?: number }) {
  let pending = new Map<string, { count: number; at: number; address: string }>();
  const maxKeys = opts.maxKeys ?? 100_000;

  const flush = async () => {
    if (pending.size === 0) return;
    const batch = pending;
    pending = new Map();
    const records = [...batch].map(([id, u]) => ({ id, count: u.count, lastUsed: new Date(u.at).toISOString(), address: u.address }));
    try {
      await opts.send(records);
    } catch (err) {
      opts.log.warn({ err: { message: (err as Error).message }, keys: records.length }, "could not record key use; keeping it for the next batch");
      for (const [id, u] of batch) {
        const cur = pending.get(id);
        if (!cur) pending.set(id, u);
        else pending.set(id, { count: cur.count + u.count, at: Math.max(cur.at, u.at), address: cur.at >= u.at ? cur.address : u.address });
      }
    }
  };

  const timer = setInterval(() => void flush(), opts.intervalMs ?? 5000);
  timer.unref();

  return {
    record(id: string, address: string): void {
      const cur = pending.get(id);
      if (cur) {
        cur.count++;
        cur.at = Date.now();
        cur.address = address;
      } else if (pending.size < maxKeys) {
        pending.set(id, { count: 1, at: Date.now(), address });
      }
    },
    flush,
    async close(): Promise<void> {
      clearInterval(timer);
      await flush();
    },
  };
}
