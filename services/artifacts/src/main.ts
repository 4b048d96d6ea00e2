import { bootService, postgresSchema } from "@svc/kit";
import { loadConfig, type ArtifactsConfig } from "./config.js";
import { FORMATS } from "./formats/index.js";
import { migrationsOf } from "./store/migrations.js";
import { SCHEMA, type ArtifactsDatabase } from "./store/schema.js";
import { wireArtifacts } from "./wiring.js";
import { ARTIFACTS_AUDIT } from "./routes/audit-actions.js";

void bootService({
  name: "artifacts",
  audit: ARTIFACTS_AUDIT,
  loadConfig,
  database: postgresSchema<ArtifactsDatabase>({
    schema: SCHEMA,
    migrations: migrationsOf(FORMATS),
    // A read-only mirror may read a replica of the writer's database (docs/install/read-only-mirror.md).
    replica: (config: ArtifactsConfig) => (config.readOnly ? undefined : "svc.read-only is false: only a read-only artifacts node (svc.read-only=true) runs on a replica"),
  }),
  wire: (ctx) => wireArtifacts(ctx),
});
