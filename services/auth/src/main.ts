import { ARTIFACTS_INTERNAL, type RepositorySummary } from "@svc/contracts";
import { bootService, internalClient, pingDb, postgresSchema } from "@svc/kit";
import { buildApp } from "./app.js";
import { loadConfig } from "./config.js";
import { credentialServiceFactory } from "./domain/credential-service.js";
import { identityServiceFactory } from "./domain/identity-service.js";
import { loginFlowServiceFactory } from "./domain/login-flow-service.js";
import { loginStoreFactory } from "./store/login-store.js";
import { personalKeyServiceFactory } from "./domain/personal-key-service.js";
import { principalServiceFactory } from "./domain/principal-service.js";
import { repositoryCheckFactory } from "./domain/repository-check.js";
import { provisionAtStartup } from "./domain/startup-provisioning.js";
import { credentialAnnouncerFactory } from "./messaging/credential-announcer.js";
import { credentialStoreFactory } from "./store/credential-store.js";
import { subjectStoreFactory } from "./store/subject-store.js";
import { migrations } from "./store/migrations.js";
import { outboxStoreFactory } from "./store/outbox-store.js";
import { SCHEMA, type AuthDatabase } from "./store/schema.js";
import { AUTH_AUDIT } from "./routes/audit-actions.js";

void bootService({
  name: "auth",
  audit: AUTH_AUDIT,
  loadConfig,
  database: postgresSchema<AuthDatabase>({ schema: SCHEMA, migrations }),
  async wire({ config, log, metrics, bus, db, pool }) {
    // Announcements: written to the outbox with each change, published before the call answers,
    // and relayed from the outbox while NATS is away.
    const changes = credentialAnnouncerFactory({ bus, outbox: outboxStoreFactory(db), tenant: config.tenant, log });
    changes.start();
    const credentialStore = credentialStoreFactory(db);
    // Only to word a warning on a grant naming an unknown repository: a short timeout, since the
    // grant answers without the check when artifacts is slow or away.
    const artifacts = internalClient({ baseUrl: config.artifactsUrl, service: "artifacts service", internalSecret: config.internalSecret, tenant: config.tenant, caller: "auth", connections: 1, timeoutMs: 2_000 });
    const repositories = repositoryCheckFactory({
      repositoryNames: async () => (await artifacts.get<RepositorySummary[]>(ARTIFACTS_INTERNAL.repositories)).body.map((r) => r.name),
      log,
    });
    const subjects = subjectStoreFactory(db);
    const credentials = credentialServiceFactory({
      store: credentialStore,
      tenant: config.tenant,
      defaultLifetime: config.credentialDefaultLifetime,
      maxLifetime: config.credentialMaxLifetime,
      trackUsage: config.trackKeyUsage,
      announce: changes,
      repositories,
      subjects,
    });
    const principals = principalServiceFactory({ credentials: credentialStore, subjects, announce: changes, repositories });
    const identity = identityServiceFactory({ credentials: credentialStore, subjects, tenant: config.tenant });
    const personalKeys = personalKeyServiceFactory({ credentials, store: credentialStore, subjects });
    const logins = loginFlowServiceFactory({ store: loginStoreFactory(db), personalKeys });
    await provisionAtStartup({ settings: config, credentials, principals, announcerReady: changes.ready, log });
    const checks = [{ name: "postgres", check: () => pingDb(pool) }];
    const app = buildApp({ log, internalSecret: config.internalSecret, internalSecretPrevious: config.internalSecretPrevious, credentials, principals, identity, personalKeys, logins, checks, metrics });
    // The posture (admin) warns of a set bootstrap key; admin itself need not be given the key.
    return {
      app,
      ready: { events: changes.subject },
      status: (): Record<string, string> => (config.bootstrapKey ? { "bootstrap-key": "set" } : {}),
      closers: [() => changes.stop(), () => artifacts.close()],
    };
  },
});
