import { createLogger, onShutdown, refuseStart } from "@svc/kit";
import { buildApp } from "./app.js";
import { loadConfig, type AdminConfig } from "./config.js";
import { capabilitiesOf } from "./routes/capability-routes.js";

let config: AdminConfig;
try {
  config = loadConfig();
} catch (err) {
  refuseStart("admin", err);
}

const { log } = createLogger("admin", config.logLevel);
const app = buildApp({ log, internalSecret: config.internalSecret, capabilities: capabilitiesOf(config) });
await app.listen({ host: config.host, port: config.port });
log.info("admin service ready");

onShutdown(log, [() => app.close()]);
