import { bootService, pingDb, postgresSchema } from "@svc/kit";
import { buildApp } from "./app.js";
import { loadConfig } from "./config.js";
import { credentialServiceFactory } from "./domain/credential-service.js";
import { principalServiceFactory } from "./domain/principal-service.js";
import { provisionAtStartup } from "./domain/startup-provisioning.js";
import { credentialAnnouncerFactory } from "./messaging/credential-announcer.js";
import { credentialStoreFactory } from "./store/credential-store.js";
import { subjectStoreFactory } from "./store/subject-store.js";
import { migrations } from "./store/migrations.js";
import { outboxStoreFactory } from "./store/outbox-store.js";
import { SCHEMA, type AuthDatabase } from "./store/schema.js";

await bootService({
  name: "auth",
  loadConfig,
  database: postgresSchema<AuthDatabase>({ schema: SCHEMA, migrations }),
  async wire({ config, log, metrics, bus, db, pool }) {
    // Announcements: written to the outbox with each change, published before the call answers,
    // and relayed from the outbox while NATS is away.
    const changes = credentialAnnouncerFactory({ bus, outbox: outboxStoreFactory(db), tenant: config.tenant, log });
    changes.start();
    const credentialStore = credentialStoreFactory(db);
    const credentials = credentialServiceFactory({
      store: credentialStore,
      tenant: config.tenant,
      defaultLifetime: config.credentialDefaultLifetime,
      maxLifetime: config.credentialMaxLifetime,
      trackUsage: config.trackKeyUsage,
      announce: changes,
    });
    const principals = principalServiceFactory({ credentials: credentialStore, subjects: subjectStoreFactory(db), announce: changes });
    await provisionAtStartup({ settings: config, credentials, principals, announcerReady: changes.ready, log });
    const checks = [{ name: "postgres", check: () => pingDb(pool) }];
    const app = buildApp({ log, internalSecret: config.internalSecret, internalSecretPrevious: config.internalSecretPrevious, credentials, principals, checks, metrics });
    // The posture (admin) warns of a set bootstrap key; admin itself need not be given the key.
    return {
      app,
      ready: { events: changes.subject },
      status: (): Record<string, string> => (config.bootstrapKey ? { "bootstrap-key": "set" } : {}),
      closers: [() => changes.stop()],
    };
  },
});
