import { isLoopback, loadSettings, requireSettings, SettingsError, type NodeAgentSettings, type Settings } from "@svc/kit";

export type ConsoleConfig = Pick<
  Settings,
  | "tenant"
  | "profile"
  | "uiSessionLifetimeMs"
  | "uiSessionIdleTimeoutMs"
  | "uiSecureCookie"
  | "uiPublicUrl"
  | "uiGatewayUrl"
  | "uiDeploy"
  | "adminUrl"
  | "sources"
  | "uiOidcIssuerUri"
  | "uiOidcClientId"
  | "uiOidcClientSecret"
  | "uiOidcName"
  | "uiOauthClientId"
  | "uiOauthClientSecret"
  | "uiOauthAuthorizeUrl"
  | "uiOauthTokenUrl"
  | "uiOauthUserUrl"
  | "uiOauthScope"
  | "internalSecret"
  | "internalSecretPrevious"
  | "databaseUrl"
  | "natsUrl"
  | "host"
  | "port"
  | "socket"
  | "logLevel"
  | "shutdownGraceMs"
  | "databasePoolSize"
> &
  NodeAgentSettings;

/** Settings this service refuses to start without (deploy/manifests.test.ts checks each Deployment sets them). */
export const REQUIRED_SETTINGS = ["databaseUrl", "internalSecret", "natsUrl"] satisfies Parameters<typeof requireSettings>[1];

/** The host of a plain-http URL that is not this machine's loopback, else undefined. */
function plainHttpOffLoopback(url: string): string | undefined {
  const u = new URL(url);
  return u.protocol === "http:" && !isLoopback(u.hostname.replace(/^\[|\]$/g, "")) ? u.hostname : undefined;
}

/**
 * The cross-field rules of the console's settings: a provider is configured whole or not at all,
 * and a plain-http issuer is taken only on this machine's loopback (tokens and the person's
 * identity would otherwise cross the network readable and forgeable).
 */
export function consoleProblems(
  s: Pick<ConsoleConfig, "uiOidcIssuerUri" | "uiOidcClientId" | "uiOauthClientId" | "uiOauthClientSecret" | "uiOauthAuthorizeUrl" | "uiOauthTokenUrl" | "uiOauthUserUrl">,
): string[] {
  const problems: string[] = [];
  if (s.uiOidcIssuerUri !== "") {
    const host = plainHttpOffLoopback(s.uiOidcIssuerUri);
    if (host !== undefined) {
      problems.push(
        `svc.ui.oidc.issuer-uri is a plain-http issuer on "${host}": http is accepted only on a loopback address (127.0.0.1, ::1, localhost); use the issuer's https URL (its CA through NODE_EXTRA_CA_CERTS)`,
      );
    }
    if (s.uiOidcClientId === "") problems.push("svc.ui.oidc.client-id is required when svc.ui.oidc.issuer-uri is set");
  } else if (s.uiOidcClientId !== "") {
    problems.push("svc.ui.oidc.issuer-uri is required when svc.ui.oidc.client-id is set");
  }
  if (s.uiOauthClientId !== "") {
    if (s.uiOauthClientSecret === "") problems.push("svc.ui.oauth.client-secret is required when svc.ui.oauth.client-id is set");
    for (const [name, value] of [["svc.ui.oauth.authorize-url", s.uiOauthAuthorizeUrl], ["svc.ui.oauth.token-url", s.uiOauthTokenUrl], ["svc.ui.oauth.user-url", s.uiOauthUserUrl]] as const) {
      const host = plainHttpOffLoopback(value);
      if (host !== undefined) problems.push(`${name} is plain http on "${host}": http is accepted only on a loopback address`);
    }
  }
  return problems;
}

export function loadConfig(argv = process.argv.slice(2), env = process.env): ConsoleConfig {
  const s = loadSettings({ argv, env });
  requireSettings(s, REQUIRED_SETTINGS);
  const problems = consoleProblems(s);
  if (problems.length > 0) throw new SettingsError(problems);
  return s;
}
