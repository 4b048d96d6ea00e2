import { rmdir, stat, unlink } from "node:fs/promises";
import { storeLayout } from "@svc/kit";

/**
 * The only changes the walker makes to the store itself: an abandoned upload in tmp/ and a
 * folder left empty. Both re-check their condition at the moment of acting.
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
        return st.size;
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
  };
}
