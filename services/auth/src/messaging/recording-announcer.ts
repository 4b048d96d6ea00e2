import type { Announcer, CredentialChange } from "./credential-announcer.js";

/** For unit tests of the domain: records what each change announces, with nothing in flight. */
export function recordingAnnouncer(published: CredentialChange[], tenant = "acme"): Announcer {
  return {
    record: async (_tx, change) => {
      published.push(change);
      return { id: String(published.length), time: new Date(0).toISOString(), tenant, ...change };
    },
    deliver: async () => {},
  };
}
