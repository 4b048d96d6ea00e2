import { html, type Html } from "../html.js";

/**
 * "Set me up": the client configuration for one repository on this server, as the integration
 * guides (docs/integration/*.md) give it, with this server's address and the repository's name
 * filled in. The key is always a placeholder (an environment variable or `<your key>`): a page
 * never shows a key.
 */

export interface SetupTarget {
  /** The server's public address, without a trailing slash (`https://repo.example.com`). */
  base: string;
  repository: string;
  format: string;
  /** Whether a request without Service-Repository-Name is authorised against this repository (its scopeFromPath). */
  scopeFromPath: boolean;
}

/** One client's configuration: what to put where. */
export interface SetupSnippet {
  client: string;
  /** Where it goes (`.npmrc in the project`). */
  where: string;
  text: string;
}

const KEY = "<your key>";

const hostOf = (base: string) => base.replace(/^[a-z][a-z0-9+.-]*:\/\//i, "");

/** Why a header-less client's key works, or what it needs (the repository's scopeFromPath). */
export function scopeNote(t: SetupTarget, clients: string): string {
  return t.scopeFromPath
    ? `${t.repository} is authorised by its path (scopeFromPath on): a key granted on ${t.repository} alone works with ${clients}.`
    : `${clients} cannot send Service-Repository-Name: a key granted on ${t.repository} alone works only once an administrator switches on ${t.repository}'s scopeFromPath (on this page); until then the key needs its right on *.`;
}

/** The snippets for `t`'s format, in the order people reach for them. */
export function setupSnippets(t: SetupTarget): SetupSnippet[] {
  const url = `${t.base}/repository/${t.repository}`;
  const bare = `//${hostOf(t.base)}/repository/${t.repository}/`;
  switch (t.format) {
    case "npm":
      return [
        { client: "npm", where: ".npmrc in the project (or ~/.npmrc), with NPM_TOKEN holding your key", text: `registry=${url}/\n${bare}:_authToken=\${NPM_TOKEN}` },
        { client: "pnpm", where: "registry= in the project's .npmrc, the token line in ~/.npmrc (pnpm 10 ignores it in the project's)", text: `# .npmrc in the project\nregistry=${url}/\n\n# ~/.npmrc\n${bare}:_authToken=\${NPM_TOKEN}` },
        { client: "yarn 4", where: ".yarnrc.yml in the project", text: `npmRegistryServer: "${url}/"\nnpmAuthToken: "\${NPM_TOKEN}"\nnpmAlwaysAuth: true` },
        { client: "install and publish", where: "a shell", text: `npm install <package> --registry ${url}/\nnpm publish --registry ${url}/` },
      ];
    case "maven":
      return [
        {
          client: "settings.xml",
          where: "~/.m2/settings.xml, with REPO_KEY holding your key (the user name is ignored)",
          text: `<settings>\n  <servers>\n    <server>\n      <id>${t.repository}</id>\n      <username>maven</username>\n      <password>\${env.REPO_KEY}</password>\n      <configuration>\n        <httpHeaders>\n          <property><name>Service-Repository-Name</name><value>${t.repository}</value></property>\n        </httpHeaders>\n      </configuration>\n    </server>\n  </servers>\n  <profiles>\n    <profile>\n      <id>${t.repository}</id>\n      <repositories>\n        <repository><id>${t.repository}</id><url>${url}</url></repository>\n      </repositories>\n    </profile>\n  </profiles>\n  <activeProfiles><activeProfile>${t.repository}</activeProfile></activeProfiles>\n</settings>`,
        },
        {
          client: "distributionManagement",
          where: "pom.xml, to deploy (mvn deploy)",
          text: `<distributionManagement>\n  <repository><id>${t.repository}</id><url>${url}</url></repository>\n  <snapshotRepository><id>${t.repository}</id><url>${url}</url></snapshotRepository>\n</distributionManagement>`,
        },
      ];
    case "pypi":
      return [
        { client: "pip.conf", where: "~/.config/pip/pip.conf (or PIP_INDEX_URL), your key as the password", text: `[global]\nindex-url = ${t.base.replace("://", `://__token__:${KEY}@`)}/repository/${t.repository}/simple/` },
        { client: ".pypirc", where: "~/.pypirc, then twine upload -r " + t.repository + " dist/*", text: `[distutils]\nindex-servers = ${t.repository}\n\n[${t.repository}]\nrepository = ${url}/\nusername = __token__\npassword = ${KEY}` },
        { client: "install", where: "a shell", text: `pip install --index-url ${url}/simple/ <project>` },
      ];
    case "oci": {
      const host = hostOf(t.base);
      return [
        { client: "docker or podman", where: "a shell, with REPO_KEY holding your key (the user name is ignored)", text: `docker login --username svc --password-stdin ${host} <<<"$REPO_KEY"\ndocker pull ${host}/${t.repository}/<image>:<tag>\ndocker tag <local image> ${host}/${t.repository}/<image>:<tag>\ndocker push ${host}/${t.repository}/<image>:<tag>` },
      ];
    }
    case "cargo":
      return [
        { client: ".cargo/config.toml", where: "the project's or ~/.cargo/config.toml", text: `[registries.${t.repository}]\nindex = "sparse+${url}/"\ncredential-provider = ["cargo:token"]` },
        { client: "token", where: "a shell", text: `export CARGO_REGISTRIES_${t.repository.toUpperCase().replace(/[^A-Z0-9]/g, "_")}_TOKEN="${KEY}"\ncargo publish --registry ${t.repository}` },
      ];
    case "go":
      return [{ client: "GOPROXY", where: "a shell (or go env -w); the key in ~/.netrc as the password for " + hostOf(t.base), text: `export GOPROXY=${url}\n# ~/.netrc\nmachine ${hostOf(t.base).replace(/:\d+$/, "")} login go password ${KEY}` }];
    default:
      return [
        {
          client: "curl",
          where: "a shell, with REPO_KEY holding your key",
          text: `curl -H "Service-Repository-Key: $REPO_KEY" -H "Service-Repository-Name: ${t.repository}" -T <file> ${url}/<path>\ncurl -H "Service-Repository-Key: $REPO_KEY" -H "Service-Repository-Name: ${t.repository}" -O ${url}/<path>`,
        },
      ];
  }
}

/** The clients of `format` that cannot send Service-Repository-Name, as a sentence names them; undefined: they all can (or the path always names it). */
function headerless(format: string): string | undefined {
  return ({ npm: "npm, pnpm and yarn", pypi: "pip and twine", cargo: "cargo", go: "the go command" } as Record<string, string>)[format];
}

/** The box on a repository's page. */
export function setMeUpSection(t: SetupTarget): Html {
  const clients = headerless(t.format);
  return html`<section aria-labelledby="setup-heading" id="set-me-up">
    <h2 id="setup-heading">Set me up</h2>
    <p>Client configuration for <strong>${t.repository}</strong> on <code>${t.base}</code>. Put your own key where the placeholder is (a personal key, or one from Credentials); this page never shows a key.</p>
    ${clients ? html`<p class="scope-note">${scopeNote(t, clients)}</p>` : ""}
    ${setupSnippets(t).map((s) => html`<h3>${s.client}</h3><p><small>${s.where}</small></p><pre class="setup"><code>${s.text}</code></pre>`)}
  </section>`;
}
