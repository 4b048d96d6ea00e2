import { AUTH_INTERNAL, type KeyResolution, type KeyUsageBatch, type PersonResolution } from "@svc/contracts";
import { internalClient } from "@svc/kit";
import { PERSON_ENTRY, compilePerson, compileResolution, type KeyRights } from "./rights-cache.js";

/** Asks the auth service for a key's or a person's rights, signed as the gateway itself. */
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
    /** The rights cache's lookup: a key by its id, a person by `personEntry(id)`. */
    async lookup(entry: string): Promise<KeyRights | null> {
      if (entry.startsWith(PERSON_ENTRY)) {
        const res = await auth.get<PersonResolution>(AUTH_INTERNAL.personPath(entry.slice(PERSON_ENTRY.length)), { expect: [200] });
        return compilePerson(res.body);
      }
      const res = await auth.get<KeyResolution>(AUTH_INTERNAL.keyPath(entry), { expect: [200, 404] });
      return res.status === 404 ? null : compileResolution(res.body);
    },
    /** Starts a command-line sign-in for npm's web login (the auth service's POST /api/logins). */
    async startLogin(label: string): Promise<{ loginPath: string; donePath: string }> {
      const res = await auth.post<{ loginPath: string; donePath: string }>("/api/logins", { client: "npm", label }, { expect: [201] });
      return res.body;
    },
    async postUsage(batch: KeyUsageBatch): Promise<void> {
      await auth.post(AUTH_INTERNAL.usage, batch, { expect: [204] });
    },
    close: () => auth.close(),
  };
}
