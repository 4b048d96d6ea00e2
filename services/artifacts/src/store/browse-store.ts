import { sql } from "kysely";
import type { Db } from "./metadata-store.js";
import { SCHEMA } from "./schema.js";

/** One entry of a folder: a file, or a folder with how many files it holds below it. */
export interface FolderEntry {
  name: string;
  folder: boolean;
  /** Files at or below the entry (1 for a file). */
  files: number;
  /** Their total size in bytes. */
  bytes: number;
  /** The newest change at or below it. */
  updated: Date;
}

/** A file whose path matched a search. */
export interface FoundFile {
  repository: string;
  path: string;
  size: number;
  updated: Date;
}

const likePattern = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * Read-only looks at the path index for the console's views: one folder's entries (its files
 * and sub-folders, from the index alone, so a folder is a page and never a path), and a search
 * of every repository's paths by a part of their name.
 */
export function browseStoreFactory(root: Db) {
  const table = sql.id(SCHEMA, "artifacts");
  return {
    /** The entries directly under `folder` ("" or ending in "/"), in byte order of their names, at most `limit` of them after `after`. */
    async folder(repository: string, folder: string, opts: { after?: string; limit: number }): Promise<FolderEntry[]> {
      const rest = sql`substr(path, ${folder.length + 1}::int)`;
      const { rows } = await sql<{ name: string; folder: boolean; files: string; bytes: string; updated: Date }>`
        select name, bool_or(nested) as folder, count(*) as files, coalesce(sum(size), 0) as bytes, max(updated_at) as updated
        from (
          select split_part(${rest}, '/', 1) as name, strpos(${rest}, '/') > 0 as nested, size, updated_at
          from ${table}
          where repository = ${repository} and (path collate "C") like ${`${likePattern(folder)}%`}
        ) as e
        where (${opts.after ?? null}::text is null or (name collate "C") > (${opts.after ?? ""}::text collate "C"))
        group by name
        order by name collate "C"
        limit ${opts.limit}::int`.execute(root);
      return rows.map((r) => ({ name: r.name, folder: r.folder, files: Number(r.files), bytes: Number(r.bytes), updated: r.updated }));
    },

    /** Files of any repository whose path holds `text` (any letter case), by repository and path. */
    async search(text: string, limit: number): Promise<FoundFile[]> {
      const { rows } = await sql<{ repository: string; path: string; size: string; updated_at: Date }>`
        select repository, path, size, updated_at from ${table}
        where path ilike ${`%${likePattern(text)}%`}
        order by repository, path collate "C"
        limit ${limit}::int`.execute(root);
      return rows.map((r) => ({ repository: r.repository, path: r.path, size: Number(r.size), updated: r.updated_at }));
    },
  };
}
export type BrowseStore = ReturnType<typeof browseStoreFactory>;
