import { constants } from "node:fs";
import { open, rmdir, stat, unlink } from "node:fs/promises";
import { isBlobName, storeLayout } from "@svc/kit";

/**
 * The only changes the walker makes to the store itself: an abandoned upload in tmp/, a
 * folder left empty and a blob no artifact links to. Each re-checks its condition at the
 * moment of acting.
 */
export function localActionsFactory(root: string, now: () => number = Date.now) {
  const layout = storeLayout(root);
  return {
    async removeTemp(name: string, olderThanMs: number): Promise<number | undefined> {
      if (name.includes("/") || name === "." || name === "..") return undefined;
      const p = layout.tmpFile(name);
      const st = await stat(p).catch(() => undefined);
      if (!st?.isFile() || now() - st.mtimeMs < olderThanMs) return undefined;
      try {
        await unlink(p);
        // Linked as a blob already (a crash between that link and the rename): nothing freed yet.
        return st.nlink > 1 ? 0 : st.size;
      } catch {
        return undefined;
      }
    },
    async removeEmptyFolder(repository: string, folder: string, olderThanMs: number): Promise<boolean> {
      if (folder === "") return false;
      const p = layout.pathOf(repository, folder.split("/"));
      const st = await stat(p).catch(() => undefined);
      if (!st?.isDirectory() || now() - st.mtimeMs < olderThanMs) return false;
      try {
        await rmdir(p); // refuses a folder that is not empty
        return true;
      } catch {
        return false;
      }
    },
    /**
     * Safe with several artifacts replicas on one shared filesystem without asking them: a link
     * count of one means no artifact path holds the inode, and should a publish link it between
     * this check and the unlink, only the blob's name goes, its content stays whole under the
     * path (jobs/reclaim.ts). The count is read from an open descriptor: opening revalidates
     * what an NFS client caches about the file.
     */
    async removeBlob(sha256: string, olderThanMs: number): Promise<number | undefined> {
      if (!isBlobName(sha256)) return undefined;
      const p = layout.blobOf(sha256);
      let size: number;
      try {
        const fh = await open(p, constants.O_RDONLY | constants.O_NOFOLLOW);
        try {
          const st = await fh.stat();
          if (!st.isFile() || st.nlink !== 1 || now() - st.mtimeMs < olderThanMs) return undefined;
          size = st.size;
        } finally {
          await fh.close();
        }
        await unlink(p);
        return size;
      } catch {
        return undefined;
      }
    },
  };
}
