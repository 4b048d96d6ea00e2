import type { Logger } from "pino";
import type { WalkStore } from "../store/walk-store.js";

export interface Lease {
  readonly name: string;
  /** True once renewal failed past the lease's lifetime or another holder took it: stop now. */
  lost(): boolean;
  release(): Promise<void>;
}

export interface LeaseOptions {
  store: Pick<WalkStore, "takeLease" | "renewLease" | "dropLease">;
  /** Unique per process. */
  holder: string;
  ttlMs?: number;
  log: Pick<Logger, "warn">;
  now?: () => number;
}

/**
 * One walk over the store at a time cluster-wide: a row (the store's lease) with the holder
 * and an expiry, renewed every third of its lifetime while the walk runs; taken only when free
 * or lapsed, never twice by one holder. A holder that dies stops renewing
 * and the lease lapses after `ttlMs`; a holder that cannot renew for a whole lifetime (or
 * finds the lease taken) considers it lost and stops its walk.
 */
export function leaseManagerFactory(o: LeaseOptions) {
  const ttlMs = o.ttlMs ?? 30_000;
  const now = o.now ?? Date.now;
  return {
    holder: o.holder,
    ttlMs,
    async acquire(name: string): Promise<Lease | undefined> {
      if (!(await o.store.takeLease(name, o.holder, ttlMs))) return undefined;
      let confirmedUntil = now() + ttlMs;
      let lost = false;
      let released = false;
      const renew = async () => {
        try {
          if (await o.store.renewLease(name, o.holder, ttlMs)) confirmedUntil = now() + ttlMs;
          else lost = true;
        } catch (err) {
          o.log.warn({ err, walk: name }, "could not renew a walk lease");
        }
        if (now() >= confirmedUntil) lost = true;
        if (lost && !released) o.log.warn({ walk: name }, "lost the walk lease; stopping the walk");
      };
      const timer = setInterval(() => void renew(), Math.max(10, Math.floor(ttlMs / 3)));
      timer.unref();
      return {
        name,
        lost: () => lost || now() >= confirmedUntil,
        async release() {
          released = true;
          clearInterval(timer);
          if (!lost) await o.store.dropLease(name, o.holder).catch((err) => o.log.warn({ err, walk: name }, "could not release a walk lease; it lapses on its own"));
        },
      };
    },
  };
}
export type LeaseManager = ReturnType<typeof leaseManagerFactory>;
