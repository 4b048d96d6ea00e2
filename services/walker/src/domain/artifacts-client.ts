import {
  ARTIFACTS_INTERNAL,
  NEXT_CURSOR_HEADER,
  type ArtifactMeta,
  type BackfillResult,
  type CollectResult,
  type ForgetResult,
  type ReclaimBlobsResult,
  type RepositorySummary,
  type RetentionRemoveResult,
  type VerifyBlobResult,
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

    /** Every index row of a repository in byte order of the path, a page at a time (one page in memory). */
    async *metadata(repository: string, pageSize = 1000): AsyncGenerator<ArtifactMeta[]> {
      let after: string | undefined;
      for (;;) {
        const q = new URLSearchParams({ limit: String(pageSize) });
        if (after !== undefined) q.set("after", after);
        const { body, headers } = await artifacts.get<ArtifactMeta[]>(`${ARTIFACTS_INTERNAL.artifactsPath(repository)}?${q}`);
        if (body.length) yield body;
        const next = headers[NEXT_CURSOR_HEADER];
        if (typeof next !== "string" || !next || body.length === 0) return;
        after = next;
      }
    },

    removeForRetention: async (a: Parameters<WalkActions["removeForRetention"]>[0]) =>
      (await artifacts.post<RetentionRemoveResult>(ARTIFACTS_INTERNAL.remove, { ...a, reason: "retention" })).body,
    forget: async (a: Parameters<WalkActions["forget"]>[0]) => (await artifacts.post<ForgetResult>(ARTIFACTS_INTERNAL.forget, a)).body,
    reclaimBlobs: async (a: Parameters<WalkActions["reclaimBlobs"]>[0]) => (await artifacts.post<ReclaimBlobsResult>(ARTIFACTS_INTERNAL.reclaimBlobs, a)).body,
    verifyBlob: async (a: Parameters<WalkActions["verifyBlob"]>[0]) => (await artifacts.post<VerifyBlobResult>(ARTIFACTS_INTERNAL.verifyBlob, a)).body,
    backfill: async (repository: string, paths: string[]) => (await artifacts.post<BackfillResult>(ARTIFACTS_INTERNAL.backfillPath(repository), { paths })).body,
    collect: async (repository: string, step: "gc" | "retention", graceMs: number) => (await artifacts.post<CollectResult>(ARTIFACTS_INTERNAL.collectPath(repository), { step, graceMs })).body,
    close: () => artifacts.close(),
  };
}
export type ArtifactsClient = ReturnType<typeof artifactsClientFactory>;
