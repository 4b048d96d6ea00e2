import type { ConsolePage } from "./page-contract.js";
import { posturePage } from "./posture-page.js";

/** Every page, in navigation order (Posture, Metrics, Logs, Caches, Walks, Repositories, Credentials, People and groups, Webhooks, Settings). */
export const PAGES: ConsolePage[] = [posturePage];
