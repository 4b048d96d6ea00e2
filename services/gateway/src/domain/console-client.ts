import { CONSOLE_INTERNAL, type SessionResolution } from "@svc/contracts";
import { internalClient } from "@svc/kit";
import { compileSession, type Session } from "./session-cache.js";

/** Asks the console what a session id stands for, signed as the gateway itself; null when the session is unknown or over. */
export function consoleClientFactory(opts: { consoleUrl: string; internalSecret: string; tenant: string }) {
  const console = internalClient({
    baseUrl: opts.consoleUrl,
    service: "console",
    internalSecret: opts.internalSecret,
    tenant: opts.tenant,
    caller: "gateway",
    connections: 8,
    timeoutMs: 5000,
  });
  return {
    async session(id: string): Promise<Session | null> {
      const res = await console.get<SessionResolution>(CONSOLE_INTERNAL.sessionPath(id), { expect: [200, 404] });
      return res.status === 404 ? null : compileSession(res.body);
    },
    close: () => console.close(),
  };
}
