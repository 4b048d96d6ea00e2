import { AUTH_INTERNAL, type KeyResolution, type KeyUsageBatch } from "@svc/contracts";
import { internalClient } from "@svc/kit";
import { compileResolution, type KeyRights } from "./rights-cache.js";

/** Asks the auth service for a key's rights, signed as the gateway itself. */
export function authClientFactory(opts: { authUrl: string; internalSecret: string; tenant: string }) {
  const auth = internalClient({
    baseUrl: opts.authUrl,
    service: "auth service",
    internalSecret: opts.internalSecret,
    tenant: opts.tenant,
    caller: "gateway",
    connections: 16,
    timeoutMs: 5000,
  });

  return {
    async lookup(id: string): Promise<KeyRights | null> {
      const res = await auth.get<KeyResolution>(AUTH_INTERNAL.keyPath(id), { expect: [200, 404] });
      return res.status === 404 ? null : compileResolution(res.body);
    },
    async postUsage(batch: KeyUsageBatch): Promise<void> {
      await auth.post(AUTH_INTERNAL.usage, batch, { expect: [204] });
    },
    close: () => auth.close(),
  };
}
