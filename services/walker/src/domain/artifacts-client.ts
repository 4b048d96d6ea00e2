import {
  ARTIFACTS_INTERNAL,
  NEXT_CURSOR_HEADER,
  type ArtifactMeta,
  type ForgetResult,
  type IndexResult,
  type RepositorySummary,
  type RetentionRemoveResult,
} from "@svc/contracts";
import { internalClient } from "@svc/kit";
import type { WalkActions } from "./job-types.js";

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
  const artifacts = internalClient({
    baseUrl: o.baseUrl,
    service: "artifacts service",
    internalSecret: o.internalSecret,
    tenant: o.tenant,
    caller: "walker",
    timeoutMs: o.timeoutMs ?? 30_000,
  });

  return {
    async repositories(): Promise<RepositorySummary[]> {
      return (await artifacts.get<RepositorySummary[]>(ARTIFACTS_INTERNAL.repositories)).body;
    },

    /** Every metadata row of a repository in byte order of the path, a page at a time. */
    async *metadata(repository: string, pageSize = 1000): AsyncGenerator<ArtifactMeta> {
      let after: string | undefined;
      for (;;) {
        const q = new URLSearchParams({ limit: String(pageSize) });
        if (after !== undefined) q.set("after", after);
        const { body, headers } = await artifacts.get<ArtifactMeta[]>(`${ARTIFACTS_INTERNAL.artifactsPath(repository)}?${q}`);
        yield* body;
        const next = headers[NEXT_CURSOR_HEADER];
        if (typeof next !== "string" || !next || body.length === 0) return;
        after = next;
      }
    },

    removeForRetention: async (a: Parameters<WalkActions["removeForRetention"]>[0]) =>
      (await artifacts.post<RetentionRemoveResult>(ARTIFACTS_INTERNAL.remove, { ...a, reason: "retention" })).body,
    index: async (a: Parameters<WalkActions["index"]>[0]) => (await artifacts.post<IndexResult>(ARTIFACTS_INTERNAL.index, a)).body,
    forget: async (a: Parameters<WalkActions["forget"]>[0]) => (await artifacts.post<ForgetResult>(ARTIFACTS_INTERNAL.forget, a)).body,
    close: () => artifacts.close(),
  };
}
export type ArtifactsClient = ReturnType<typeof artifactsClientFactory>;
