import { createHash, randomBytes, randomInt } from "node:crypto";
import { notFound } from "@svc/contracts";
import type { LoginRow, LoginStore } from "../store/login-store.js";
import type { PersonalKeyService } from "./personal-key-service.js";

/** How long a sign-in waits for its person. */
export const LOGIN_LIFETIME_MS = 10 * 60_000;
/** Seconds a client waits between polls (Retry-After). */
export const POLL_SECONDS = 2;
/** Letters no one confuses (no 0/O, 1/I/L, no vowels to spell words with). */
const CODE_ALPHABET = "BCDFGHJKMNPQRSTVWXZ23456789";
/**
 * The done secret is written like a key (`svck_login.<random>`) so that every log line's
 * scrubbing (kit's scrubSecrets) hides it wherever a path holding it is logged.
 */
const SECRET_PREFIX = "svck_login.";
const SECRET_RE = /^svck_login\.[A-Za-z0-9_-]{43}$/;

const hash = (secret: string) => createHash("sha256").update(secret).digest("hex");

export type PollOutcome = { state: "pending" } | { state: "done"; token: string; id: string; person: string; expires: string | null };

/**
 * The sign-in of a command-line client through the console (npm's web login, `svc login`): the
 * client starts one and gets a short code (in the login URL it shows its person) and a secret
 * (its done URL) only it holds; the person signs in to the console and confirms the code; the
 * client's next poll with the secret takes a new personal key holding all the person's rights,
 * once: the sign-in is deleted as it is handed out. Nothing secret is stored: the key is minted
 * at that poll, and the secret is kept as its hash.
 */
export function loginFlowServiceFactory(deps: { store: LoginStore; personalKeys: Pick<PersonalKeyService, "mint">; now?: () => Date }) {
  const now = deps.now ?? (() => new Date());

  const code = () => {
    let c = "";
    for (let i = 0; i < 8; i++) c += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
    return `${c.slice(0, 4)}-${c.slice(4)}`;
  };
  const pending = async (rawCode: string): Promise<LoginRow> => {
    const row = await deps.store.byCode(rawCode.trim().toUpperCase(), now());
    if (!row) throw notFound("no sign-in is waiting with this code: it has expired (after 10 minutes) or was used; start the sign-in again");
    return row;
  };

  return {
    async start(input: { client: LoginRow["client"]; label?: string }) {
      const at = now();
      await deps.store.purgeExpired(at);
      const secret = SECRET_PREFIX + randomBytes(32).toString("base64url");
      const expires = new Date(at.getTime() + LOGIN_LIFETIME_MS);
      const c = code();
      await deps.store.insert({ code: c, doneHash: hash(secret), client: input.client, label: input.label?.trim() || null, expiresAt: expires });
      return { code: c, secret, expires: expires.toISOString(), interval: POLL_SECONDS };
    },

    /** What the console's confirmation page shows. */
    async describe(rawCode: string) {
      const row = await pending(rawCode);
      return { code: row.code, client: row.client, label: row.label, expires: row.expires_at.toISOString(), confirmed: row.person !== null };
    },

    async confirm(rawCode: string, person: string): Promise<void> {
      const row = await pending(rawCode);
      if (!(await deps.store.confirm(row.code, person, now()))) throw notFound("this sign-in was confirmed already; start it again if it was not you");
    },

    /** The client's poll: pending, or the key (once); unknown, expired or taken already: 404. */
    async poll(secret: string): Promise<PollOutcome> {
      const gone = () => notFound("no sign-in is waiting here: it has expired, was never started, or its key was handed out already");
      if (!SECRET_RE.test(secret)) throw gone();
      const at = now();
      const row = await deps.store.byDoneHash(hash(secret), at);
      if (!row) throw gone();
      if (row.person === null) return { state: "pending" };
      const taken = await deps.store.take(hash(secret), at);
      if (!taken?.person) throw gone();
      const label = taken.label ?? `${taken.client} login`;
      const minted = await deps.personalKeys.mint(taken.person, { label, all: true });
      return { state: "done", token: minted.key, id: minted.id, person: taken.person, expires: minted.expires };
    },
  };
}

export type LoginFlowService = ReturnType<typeof loginFlowServiceFactory>;
