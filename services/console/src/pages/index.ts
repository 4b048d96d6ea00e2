import { auditPage } from "./audit-page.js";
import { cachesPage } from "./caches-page.js";
import { cliLoginPage } from "./cli-login-page.js";
import { credentialsPage } from "./credentials-page.js";
import { logsPage } from "./logs-page.js";
import { metricsPage } from "./metrics-page.js";
import type { ConsolePage } from "./page-contract.js";
import { peopleGroupsPage } from "./people-groups-page.js";
import { personalKeysPage } from "./personal-keys-page.js";
import { posturePage } from "./posture-page.js";
import { repositoriesPage } from "./repositories-page.js";
import { screeningPage } from "./screening-page.js";
import { settingsPage } from "./settings-page.js";
import { walksPage } from "./walks-page.js";
import { webhooksPage } from "./webhooks-page.js";

/** Every page, in navigation order (Posture, Metrics, Logs, Audit, Caches, Walks, Repositories, Screening, Credentials, People and groups, Webhooks, Settings, Your keys). */
export const PAGES: ConsolePage[] = [posturePage, metricsPage, logsPage, auditPage, cachesPage, walksPage, repositoriesPage, screeningPage, credentialsPage, peopleGroupsPage, webhooksPage, settingsPage, personalKeysPage];

/** Pages served under /ui/<slug> that the navigation does not list (reached by a link a client prints). */
export const UNLISTED_PAGES: ConsolePage[] = [cliLoginPage];
