import { encodePrincipal } from "@svc/contracts";
import { identityHeaders } from "@svc/kit";
import type { MetaInfo, RepositoryInfo, WalkActions } from "./job-types.js";

export interface ArtifactsClientOptions {
  baseUrl: string;
  internalSecret: string;
  tenant: string;
  timeoutMs?: number;
}

/**
 * The artifacts service's internal routes, signed as the system principal `walker`: the walker
 * reads and changes artifact metadata only through them (one owner per table).
 */
export function artifactsClientFactory(o: ArtifactsClientOptions) {
  const principal = encodePrincipal({ kind: "system", tenant: o.tenant, id: "walker" });
  const call = async <T>(method: string, pathAndQuery: string, body?: unknown): Promise<{ value: T; headers: Headers }> => {
    const url = new URL(pathAndQuery, o.baseUrl);
    const signedPath = url.pathname + url.search;
    const headers: Record<string, string> = identityHeaders(o.internalSecret, method, signedPath, principal);
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(o.timeoutMs ?? 30_000) });
    const text = await res.text();
    if (!res.ok) throw new Error(`artifacts service answered ${res.status} to ${method} ${url.pathname}: ${text.slice(0, 300)}`);
    return { value: (text ? JSON.parse(text) : undefined) as T, headers: res.headers };
  };

  return {
    async repositories(): Promise<RepositoryInfo[]> {
      return (await call<RepositoryInfo[]>("GET", "/internal/repositories")).value;
    },

    /** Every metadata row of a repository in byte order of the path, a page at a time. */
    async *metadata(repository: string, pageSize = 1000): AsyncGenerator<MetaInfo> {
      let after: string | undefined;
      for (;;) {
        const q = new URLSearchParams({ limit: String(pageSize) });
        if (after !== undefined) q.set("after", after);
        const { value, headers } = await call<MetaInfo[]>("GET", `/internal/repositories/${encodeURIComponent(repository)}/artifacts?${q}`);
        yield* value;
        const next = headers.get("x-next-cursor");
        if (!next || value.length === 0) return;
        after = next;
      }
    },

    removeForRetention: (a: Parameters<WalkActions["removeForRetention"]>[0]) =>
      call<{ removed: boolean; size?: number; why?: string }>("POST", "/internal/artifacts/remove", { ...a, reason: "retention" }).then((r) => r.value),
    index: (a: Parameters<WalkActions["index"]>[0]) => call<{ outcome: string }>("POST", "/internal/artifacts/index", a).then((r) => r.value),
    forget: (a: Parameters<WalkActions["forget"]>[0]) => call<{ forgotten: boolean }>("POST", "/internal/artifacts/forget", a).then((r) => r.value),
  };
}
export type ArtifactsClient = ReturnType<typeof artifactsClientFactory>;
