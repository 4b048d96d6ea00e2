import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, inject } from "vitest";
import { startInfra, type Infra } from "@svc/devstack";
import { startSuite, type Suite } from "./suite.js";

export type SecondGateway = Awaited<ReturnType<Suite["startGateway"]>>;

/**
 * Registers, in the calling describe, a deployment with a second gateway and
 * /repository/default/shared.txt stored for both to serve. With `ownNats`, its NATS is one of
 * its own (named by `ownNats`), so a test may stop it without disturbing other test files.
 */
export function twoGateways(opts: { ownNats?: string; env?: Record<string, string> } = {}) {
  const ctx = {} as { infra: Infra; s: Suite; b: SecondGateway };
  beforeAll(async () => {
    const env = { ...opts.env };
    if (opts.ownNats) {
      const dir = join(inject("dataDir"), `nats-${opts.ownNats}-${process.pid}`);
      mkdirSync(dir, { recursive: true });
      ctx.infra = await startInfra({ dataDir: dir, log: () => {}, env: { SVC_DATABASE_URL: inject("adminDatabaseUrl"), SVC_REDIS_URL: inject("redisUrl") } });
      env.SVC_NATS_URL = ctx.infra.natsUrl;
    }
    ctx.s = await startSuite({ env });
    ctx.b = await ctx.s.startGateway();
    await ctx.s.call("PUT", "/repository/default/shared.txt", { key: ctx.s.bootstrapKey, body: "shared" });
  });
  afterAll(async () => {
    await ctx.b?.stop();
    await ctx.s?.stop();
    await ctx.infra?.stop();
  });
  return ctx;
}
