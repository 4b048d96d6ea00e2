import { AUDIT_SCHEMA, auditMigrations, createDb, migrate } from "@svc/kit";
import { createDatabase } from "@svc/devstack";
import { migrations as admin } from "../services/admin/src/store/migrations.js";
import { SCHEMA as ADMIN } from "../services/admin/src/store/schema.js";
import { FORMATS } from "../services/artifacts/src/formats/index.js";
import { migrationsOf } from "../services/artifacts/src/store/migrations.js";
import { SCHEMA as ARTIFACTS } from "../services/artifacts/src/store/schema.js";
import { migrations as auth } from "../services/auth/src/store/migrations.js";
import { SCHEMA as AUTH } from "../services/auth/src/store/schema.js";
import { migrations as consoleMigrations } from "../services/console/src/store/migrations.js";
import { SCHEMA as CONSOLE } from "../services/console/src/store/schema.js";
import { migrations as notifier } from "../services/notifier/src/store/migrations.js";
import { SCHEMA as NOTIFIER } from "../services/notifier/src/store/schema.js";
import { migrations as walker } from "../services/walker/src/store/migrations.js";
import { SCHEMA as WALKER } from "../services/walker/src/store/schema.js";

/** Each service's schema and migrations, as its main.ts gives them to bootService, and the audit trail's every service adds. */
const SCHEMAS = [
  [AUTH, auth],
  [ARTIFACTS, migrationsOf(FORMATS)],
  [ADMIN, admin],
  [WALKER, walker],
  [NOTIFIER, notifier],
  [CONSOLE, consoleMigrations],
  [AUDIT_SCHEMA, auditMigrations],
] as const;

export const TEMPLATE_DATABASE = "svc_migrated_template";

/**
 * A database with every service's migrations applied, made once per run: each suite's database
 * is a copy of it (CREATE DATABASE … TEMPLATE), so its services find nothing to migrate. Applying
 * the migrations at every suite's start cost about 1.5 s of Postgres CPU and more in the
 * services, a suite per test file. It holds migrations only, nothing a service writes as it
 * starts (the bootstrap key, nodes): a service still applies, at its start, any migration this
 * list lacks, so a copy is never behind what the services expect.
 */
export async function makeTemplateDatabase(adminDatabaseUrl: string): Promise<string> {
  const url = await createDatabase(adminDatabaseUrl, TEMPLATE_DATABASE);
  const { db, pool } = createDb<unknown>(url, { applicationName: "svc-test-template", max: 2 });
  try {
    for (const [schema, migrations] of SCHEMAS) await migrate(db, pool, schema, migrations);
  } finally {
    await db.destroy();
  }
  return TEMPLATE_DATABASE;
}
