import { Pool } from "undici";
import { upstreamAddress, type Check } from "@svc/kit";
import type { Upstreams } from "../proxy/route-table.js";

type Outcome = { ok: true } | { ok: false; error: string };

/**
 * The readiness checks of the upstream services: each one's own `/health/ready`, and Postgres
 * as the auth service last reported it (the gateway has no connection of its own).
 */
export function upstreamProbesFactory(upstreams: Upstreams) {
  const pools: Pool[] = [];
  let postgres: Outcome = { ok: false, error: "not checked yet" };
  let authProbe: Promise<unknown> = Promise.resolve();

  const probe = (name: keyof Upstreams): Check => {
    const upstream = upstreamAddress(upstreams[name]);
    const pool = new Pool(upstream.origin, { socketPath: upstream.socketPath, connections: 2 });
    pools.push(pool);
    const check = async (): Promise<Outcome> => {
      try {
        const res = await pool.request({ method: "GET", path: "/health/ready", headersTimeout: 2000, bodyTimeout: 2000 });
        const body = (await res.body.json().catch(() => ({}))) as { checks?: Record<string, { status: string; error?: string }> };
        const pg = body.checks?.postgres;
        if (name === "auth") postgres = pg?.status === "up" ? { ok: true } : { ok: false, error: pg?.error ?? "unknown" };
        return res.statusCode === 200 ? { ok: true } : { ok: false, error: `answered ${res.statusCode}` };
      } catch (err) {
        if (name === "auth") postgres = { ok: false, error: "the auth service did not answer" };
        return { ok: false, error: (err as Error).message };
      }
    };
    return {
      name,
      check: () => {
        const p = check();
        if (name === "auth") authProbe = p;
        return p;
      },
    };
  };

  const checks: Check[] = [
    probe("auth"),
    probe("artifacts"),
    probe("admin"),
    probe("walker"),
    probe("notifier"),
    // What the auth service's own probe (started just before this one) says of its database.
    {
      name: "postgres",
      check: async () => {
        await authProbe;
        return postgres;
      },
    },
  ];

  return {
    checks,
    close: () => Promise.all(pools.map((p) => p.close())).then(() => undefined),
  };
}

export type UpstreamProbes = ReturnType<typeof upstreamProbesFactory>;
