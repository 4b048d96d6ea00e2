import { LIMITS } from "@svc/contracts";
/**
 * Who can hold grants besides keys: people, by provider-qualified id (`oauth/<id>` for an
 * OAuth-provider user, `oidc/<sub>` for an OpenID Connect subject, `dev/<name>` for the dev
 * profile's built-in console accounts), and groups by name.
 */
const PERSON_RE = new RegExp(`^(oauth|oidc|dev)/[\\x21-\\x7e]{1,${LIMITS.personIdLocal}}$`);
const GROUP_RE = new RegExp(`^[^\\x00-\\x1f\\x7f/]{1,${LIMITS.groupName}}$`);

export function isPersonId(id: string): boolean {
  return PERSON_RE.test(id);
}

export const PERSON_ID_RULE = "a person id is oauth/<id> or oidc/<sub>, the id 1-255 printable ASCII characters without spaces";

export function isGroupName(name: string): boolean {
  return GROUP_RE.test(name) && name.trim() === name && name !== "";
}

export const GROUP_NAME_RULE = `a group name is 1-${LIMITS.groupName} characters without slashes, control characters or surrounding spaces`;
