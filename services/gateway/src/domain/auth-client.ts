import { Pool } from "undici";
import { encodePrincipal } from "@svc/contracts";
import { identityHeaders } from "@svc/kit";
import { compileResolution, type KeyRights, type ResolutionDoc } from "./rights-cache.js";

/** Asks the auth service for a key's rights, signed as the gateway itself. */
export function authClientFactory(opts: { authUrl: string; internalSecret: string; tenant: string }) {
  const pool = new Pool(opts.authUrl, { connections: 16, keepAliveTimeout: 60_000, headersTimeout: 5000, bodyTimeout: 5000 });
  const principal = encodePrincipal({ kind: "system", tenant: opts.tenant, id: "gateway" });

  return {
    async lookup(id: string): Promise<KeyRights | null> {
      const path = `/internal/keys/${id}`;
      const res = await pool.request({ method: "GET", path, headers: identityHeaders(opts.internalSecret, "GET", path, principal) });
      if (res.statusCode === 404) {
        await res.body.dump();
        return null;
      }
      if (res.statusCode !== 200) {
        await res.body.dump();
        throw new Error(`auth service answered ${res.statusCode} to a key lookup`);
      }
      return compileResolution((await res.body.json()) as ResolutionDoc);
    },
    async postUsage(batch: { id: string; count: number; lastUsed: string; address: string }[]): Promise<void> {
      const path = "/internal/usage";
      const res = await pool.request({
        method: "POST",
        path,
        headers: { ...identityHeaders(opts.internalSecret, "POST", path, principal), "content-type": "application/json" },
        body: JSON.stringify(batch),
      });
      await res.body.dump();
      if (res.statusCode !== 204) throw new Error(`auth service answered ${res.statusCode} to a usage batch`);
    },
    close: () => pool.close(),
  };
}
