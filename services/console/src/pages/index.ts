import type { ConsolePage } from "./page-contract.js";
import { credentialsPage } from "./credentials-page.js";
import { peopleGroupsPage } from "./people-groups-page.js";
import { posturePage } from "./posture-page.js";
import { repositoriesPage } from "./repositories-page.js";
import { webhooksPage } from "./webhooks-page.js";

/** Every page, in navigation order (Posture, Metrics, Logs, Caches, Walks, Repositories, Credentials, People and groups, Webhooks, Settings). */
export const PAGES: ConsolePage[] = [posturePage, repositoriesPage, credentialsPage, peopleGroupsPage, webhooksPage];
