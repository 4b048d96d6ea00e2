import * as oidc from "openid-client";
import type { Logger } from "pino";
import type { ConsoleConfig } from "../config.js";

export type ProviderKind = "oidc" | "oauth";

/** What a sign-in needs remembered between the redirect to the provider and its callback. */
export interface SignInStart {
  url: URL;
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** A provider's answer, as a value: an identity provider that fails is expected, not exceptional. */
export type SignInResult = { ok: true; personId: string } | { ok: false; reason: string };

export interface IdentityProvider {
  kind: ProviderKind;
  /** The sign-in button's label. */
  label: string;
  begin(redirectUri: string): Promise<SignInStart | { error: string }>;
  /** Trades the callback's code (with the PKCE verifier, checking state and nonce) for the person's id. */
  finish(callbackUrl: URL, checks: { state: string; nonce: string; codeVerifier: string }): Promise<SignInResult>;
}

/** Plain http is allowed by the settings only on loopback (config.ts refuses it elsewhere). */
const plainHttp = (url: string) => new URL(url).protocol === "http:";

async function startAt(config: oidc.Configuration, redirectUri: string, scope: string | undefined, withNonce: boolean): Promise<SignInStart> {
  const codeVerifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = withNonce ? oidc.randomNonce() : "";
  const params: Record<string, string> = {
    redirect_uri: redirectUri,
    code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: "S256",
    state,
  };
  if (scope) params.scope = scope;
  if (withNonce) params.nonce = nonce;
  return { url: oidc.buildAuthorizationUrl(config, params), state, nonce, codeVerifier };
}

const describe = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** The OpenID Connect issuer: endpoints discovered on first use (and again after a failure), person `oidc/<sub>`. */
export function oidcProvider(s: Pick<ConsoleConfig, "uiOidcIssuerUri" | "uiOidcClientId" | "uiOidcClientSecret" | "uiOidcName">, log: Pick<Logger, "warn">): IdentityProvider {
  let discovered: Promise<oidc.Configuration> | undefined;
  const configuration = () => {
    discovered ??= oidc
      .discovery(new URL(s.uiOidcIssuerUri), s.uiOidcClientId, s.uiOidcClientSecret || undefined, undefined, plainHttp(s.uiOidcIssuerUri) ? { execute: [oidc.allowInsecureRequests] } : undefined)
      .catch((err: unknown) => {
        discovered = undefined;
        throw err;
      });
    return discovered;
  };
  return {
    kind: "oidc",
    label: s.uiOidcName,
    async begin(redirectUri) {
      try {
        return await startAt(await configuration(), redirectUri, "openid", true);
      } catch (err) {
        log.warn({ err, issuer: s.uiOidcIssuerUri }, "the OpenID Connect issuer's discovery failed");
        return { error: "The identity provider does not answer: try again shortly, or ask an administrator." };
      }
    },
    async finish(callbackUrl, checks) {
      try {
        const tokens = await oidc.authorizationCodeGrant(await configuration(), callbackUrl, {
          pkceCodeVerifier: checks.codeVerifier,
          expectedState: checks.state,
          expectedNonce: checks.nonce,
          idTokenExpected: true,
        });
        const sub = tokens.claims()?.sub;
        // Whether the id is one this deployment can use is the sign-in route's check (isPersonId).
        return typeof sub === "string" ? { ok: true, personId: `oidc/${sub}` } : { ok: false, reason: "the identity provider named no subject" };
      } catch (err) {
        return { ok: false, reason: describe(err) };
      }
    },
  };
}

/** The OAuth provider app (GitHub's endpoints by default): person `oauth/<id>`, the id read from the user endpoint. */
export function oauthProvider(
  s: Pick<ConsoleConfig, "uiOauthClientId" | "uiOauthClientSecret" | "uiOauthAuthorizeUrl" | "uiOauthTokenUrl" | "uiOauthUserUrl" | "uiOauthScope">,
): IdentityProvider {
  const config = new oidc.Configuration(
    { issuer: new URL(s.uiOauthAuthorizeUrl).origin, authorization_endpoint: s.uiOauthAuthorizeUrl, token_endpoint: s.uiOauthTokenUrl },
    s.uiOauthClientId,
    s.uiOauthClientSecret,
  );
  if ([s.uiOauthAuthorizeUrl, s.uiOauthTokenUrl, s.uiOauthUserUrl].some(plainHttp)) oidc.allowInsecureRequests(config);
  return {
    kind: "oauth",
    label: new URL(s.uiOauthAuthorizeUrl).hostname === "github.com" ? "GitHub" : "OAuth provider",
    async begin(redirectUri) {
      return startAt(config, redirectUri, s.uiOauthScope || undefined, false);
    },
    async finish(callbackUrl, checks) {
      try {
        const tokens = await oidc.authorizationCodeGrant(config, callbackUrl, { pkceCodeVerifier: checks.codeVerifier, expectedState: checks.state });
        const res = await oidc.fetchProtectedResource(config, tokens.access_token, new URL(s.uiOauthUserUrl), "GET", undefined, new Headers({ accept: "application/json" }));
        if (!res.ok) return { ok: false, reason: `the user endpoint answered ${res.status}` };
        const user = (await res.json()) as { id?: unknown; sub?: unknown };
        const id = user.id ?? user.sub;
        return typeof id === "string" || typeof id === "number" ? { ok: true, personId: `oauth/${id}` } : { ok: false, reason: "the user endpoint named no id" };
      } catch (err) {
        return { ok: false, reason: describe(err) };
      }
    },
  };
}

/** The providers the settings configure, in the sign-in page's order. */
export function configuredProviders(s: ConsoleConfig, log: Pick<Logger, "warn">): IdentityProvider[] {
  const out: IdentityProvider[] = [];
  if (s.uiOidcIssuerUri !== "") out.push(oidcProvider(s, log));
  if (s.uiOauthClientId !== "") out.push(oauthProvider(s));
  return out;
}
