import { sameSecret } from "./session-service.js";

/**
 * The dev profile's two built-in accounts, each with its own name as password: one per role
 * (auth seeds `dev/admin` with administration and `dev/viewer` with read rights under the same
 * profile). The profile runs on loopback only; the posture raises `svc.profile.dev`.
 */
export const DEV_ACCOUNTS = ["admin", "viewer"] as const;

/** The person id of a dev account whose password matches, else undefined. */
export function checkDevAccount(username: string, password: string): string | undefined {
  const account = DEV_ACCOUNTS.find((a) => a === username);
  return account && sameSecret(password, account) ? `dev/${account}` : undefined;
}
