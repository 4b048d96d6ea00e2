import { createHash } from "node:crypto";
import type { BlobStore } from "@svc/blobs";
import type { BlobReader, WalkActions } from "./job-types.js";

/**
 * What the walker does with the blob store itself. It reads: a blob's bytes, hashed as they
 * stream (repair), never held whole. The one change it makes is removing a staged leftover
 * nobody committed or discarded, which the store re-checks (still untouched for the age asked)
 * at the moment of acting, and aborting an object store's multipart upload nobody completed. Blobs themselves are removed only by the artifacts service, under
 * each digest's lock and after counting its references in the index (jobs/reclaim.ts).
 */
export function localActionsFactory(blobs: Pick<BlobStore, "get" | "deleteStaged" | "abortUpload">): BlobReader & Pick<WalkActions, "deleteStaged" | "abortUpload"> {
  return {
    async digestOf(sha256) {
      const stream = await blobs.get(sha256);
      if (!stream) return undefined;
      const hash = createHash("sha256");
      for await (const chunk of stream) hash.update(chunk as Buffer);
      return hash.digest("hex");
    },
    deleteStaged: (name, olderThanMs) => blobs.deleteStaged(name, olderThanMs),
    async abortUpload(upload) {
      if (!blobs.abortUpload) return false;
      await blobs.abortUpload(upload);
      return true;
    },
  };
}
