import { bootService, postgresSchema } from "@svc/kit";
import { loadConfig } from "./config.js";
import { migrations } from "./store/migrations.js";
import { SCHEMA, type ArtifactsDatabase } from "./store/schema.js";
import { wireArtifacts } from "./wiring.js";

await bootService({
  name: "artifacts",
  loadConfig,
  database: postgresSchema<ArtifactsDatabase>({ schema: SCHEMA, migrations }),
  wire: (ctx) => wireArtifacts(ctx),
});
