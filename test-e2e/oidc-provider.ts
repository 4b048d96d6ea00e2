import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import Provider, { type Configuration } from "oidc-provider";

/**
 * A real OpenID Connect provider for the console's sign-in tests: `oidc-provider` (a certified
 * implementation) on a loopback port, with one test client per console flow and known test users.
 * Its built-in sign-in form takes a known user's login with any password. For the OAuth provider
 * app flow the same server plays a GitHub-like app: its authorization and token endpoints, and a
 * user endpoint (`/oauth/user`) answering `{ id, login }` for the provider's own access token.
 *
 * The provider must know the console's callback URLs, which are the gateway's, and the suite needs
 * the issuer URL before it starts: `start()` listens first (the issuer), `configure()` then sets
 * the clients once the suite's gateway URL is known.
 */
export interface TestIdentityProvider {
  issuer: string;
  oidcClient: { id: string; secret: string };
  oauthClient: { id: string; secret: string };
  /** Settings that point a suite's console at this provider (both flows). */
  consoleEnv(): Record<string, string>;
  /** What the provider refused or failed at, for a failing test's reader. */
  errors: string[];
  /** Registers the console's callback URLs under `gatewayUrl`. */
  configure(gatewayUrl: string): void;
  stop(): Promise<void>;
}

/** The test users by login; the login is the subject too (person ids `oidc/<login>`, `oauth/<login>`). */
export const TEST_USERS: Record<string, { sub: string; name: string }> = {
  alice: { sub: "alice", name: "Alice Example" },
  bob: { sub: "bob", name: "Bob Example" },
};

/**
 * Subjects a careless identity provider may issue that the API refuses in a person id: a login
 * typed at the provider's form becomes the subject, so these sign in as they are (both flows).
 */
export const ODD_SUBJECTS = ["alice ", "\u202Eecila", "nul\u0000byte", "x".repeat(5000)];

/** Logins whose OAuth user endpoint answers another id (the provider itself refuses an empty subject). */
export const ODD_OAUTH_IDS: Record<string, string> = { "empty-id": "" };

export async function startIdentityProvider(): Promise<TestIdentityProvider> {
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server: Server = createServer((req, res) => {
    if (handler) handler(req, res);
    else res.writeHead(503).end("not configured yet");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const oidcClient = { id: "console-oidc", secret: "oidc-client-secret-for-tests-only-0123456789" };
  const oauthClient = { id: "console-oauth", secret: "oauth-client-secret-for-tests-only-0123456789" };

  const bySub = (sub: string) => Object.values(TEST_USERS).find((u) => u.sub === sub) ?? (ODD_SUBJECTS.includes(sub) || sub in ODD_OAUTH_IDS ? { sub, name: "Odd Subject" } : undefined);

  const errors: string[] = [];
  return {
    issuer,
    errors,
    oidcClient,
    oauthClient,
    consoleEnv: () => ({
      SVC_UI_OIDC_ISSUER_URI: issuer,
      SVC_UI_OIDC_CLIENT_ID: oidcClient.id,
      SVC_UI_OIDC_CLIENT_SECRET: oidcClient.secret,
      SVC_UI_OIDC_NAME: "Test IdP",
      SVC_UI_OAUTH_CLIENT_ID: oauthClient.id,
      SVC_UI_OAUTH_CLIENT_SECRET: oauthClient.secret,
      SVC_UI_OAUTH_AUTHORIZE_URL: `${issuer}/auth`,
      SVC_UI_OAUTH_TOKEN_URL: `${issuer}/token`,
      SVC_UI_OAUTH_USER_URL: `${issuer}/oauth/user`,
    }),
    configure(gatewayUrl) {
      const config: Configuration = {
        clients: [
          { client_id: oidcClient.id, client_secret: oidcClient.secret, redirect_uris: [`${gatewayUrl}/login/oauth2/code/oidc`], grant_types: ["authorization_code"], response_types: ["code"] },
          { client_id: oauthClient.id, client_secret: oauthClient.secret, redirect_uris: [`${gatewayUrl}/login/oauth2/code/oauth`], grant_types: ["authorization_code"], response_types: ["code"] },
        ],
        // The built-in sign-in form takes any login: only the known test users are accounts.
        async findAccount(_ctx, id) {
          const user = bySub(id);
          if (!user) return undefined;
          return { accountId: user.sub, claims: async () => ({ sub: user.sub, name: user.name }) };
        },
        claims: { openid: ["sub"], profile: ["name"] },
        // GitHub's scope, which the console's OAuth flow asks for by default.
        scopes: ["openid", "profile", "read:user"],
        pkce: { required: () => true },
        cookies: { keys: ["test-provider-cookie-key-0123456789abcdef"] },
        features: { devInteractions: { enabled: true } },
      };
      const provider = new Provider(issuer, config);
      // The OAuth app's user endpoint: the provider's own access token names the person.
      provider.use(async (ctx, next) => {
        if (ctx.path !== "/oauth/user") return next();
        const token = /^Bearer (.+)$/i.exec(ctx.get("authorization"))?.[1];
        const at = token ? await provider.AccessToken.find(token) : undefined;
        if (!at) {
          ctx.status = 401;
          ctx.body = { message: "Bad credentials" };
          return;
        }
        const id = at.accountId in ODD_OAUTH_IDS ? ODD_OAUTH_IDS[at.accountId] : at.accountId;
        ctx.body = { id, login: bySub(at.accountId)?.name ?? at.accountId };
      });
      for (const event of ["authorization.error", "grant.error", "server_error", "userinfo.error"] as const) {
        provider.on(event as never, (_ctx: unknown, err: Error & { error_description?: string }) => void errors.push(`${event}: ${err.message} ${err.error_description ?? ""}`));
      }
      handler = provider.callback();
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
