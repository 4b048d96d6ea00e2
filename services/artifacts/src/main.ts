import { bootService, postgresSchema } from "@svc/kit";
import { loadConfig } from "./config.js";
import { FORMATS } from "./formats/index.js";
import { migrationsOf } from "./store/migrations.js";
import { SCHEMA, type ArtifactsDatabase } from "./store/schema.js";
import { wireArtifacts } from "./wiring.js";

await bootService({
  name: "artifacts",
  loadConfig,
  database: postgresSchema<ArtifactsDatabase>({ schema: SCHEMA, migrations: migrationsOf(FORMATS) }),
  wire: (ctx) => wireArtifacts(ctx),
});
