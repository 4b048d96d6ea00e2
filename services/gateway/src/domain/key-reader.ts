import { parseKey, type ParsedKey } from "@svc/keys";

export type Presented =
  /** `notAKey`: Authorization held something that is not a well-formed key (counted as no key). */
  | { kind: "none"; notAKey?: boolean }
  | { kind: "malformed" }
  | { kind: "key"; key: ParsedKey };

/**
 * Finds the key a request presents:
 *  - `Service-Repository-Key: <key>` wins when present; a malformed value there is refused.
 *  - `Authorization: Bearer <key>`, a bare `Authorization: <key>`, or Basic with the key as
 *    password (the user name is ignored). Only a well-formed key is read out of
 *    Authorization; anything else there counts as no key, never as a credential.
 */
export function readPresentedKey(headers: Record<string, string | string[] | undefined>): Presented {
  const explicit = headers["service-repository-key"];
  if (typeof explicit === "string" && explicit !== "") {
    const p = parseKey(explicit.trim());
    return p.ok ? { kind: "key", key: p.key } : { kind: "malformed" };
  }
  const auth = headers.authorization;
  if (typeof auth !== "string" || auth === "") return { kind: "none" };
  const candidate = fromAuthorization(auth.trim());
  if (candidate === undefined) return NOT_A_KEY;
  const p = parseKey(candidate);
  return p.ok ? { kind: "key", key: p.key } : NOT_A_KEY;
}

const NOT_A_KEY: Presented = { kind: "none", notAKey: true };

function fromAuthorization(value: string): string | undefined {
  const space = value.indexOf(" ");
  if (space < 0) return value; // the bare key
  const scheme = value.slice(0, space).toLowerCase();
  const rest = value.slice(space + 1).trim();
  if (scheme === "bearer") return rest;
  if (scheme === "basic") {
    let decoded: string;
    try {
      decoded = Buffer.from(rest, "base64").toString("utf8");
    } catch {
      return undefined;
    }
    const colon = decoded.indexOf(":");
    return colon < 0 ? undefined : decoded.slice(colon + 1);
  }
  return undefined;
}
