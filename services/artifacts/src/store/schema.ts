import type { ColumnType } from "kysely";

export const SCHEMA = "artifacts";

export interface RepositoryTable {
  name: string;
  format: string;
  created_at: ColumnType<Date, Date | undefined, never>;
}

export interface ArtifactTable {
  repository: string;
  path: string;
  size: ColumnType<string, number, number>;
  sha256: string;
  content_type: string | null;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

export interface ArtifactsDatabase {
  repositories: RepositoryTable;
  artifacts: ArtifactTable;
}
