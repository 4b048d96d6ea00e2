import { parseTokens, Right } from "@svc/grants";
import type { Heartbeat, Settings } from "@svc/kit";

export type Severity = "critical" | "warning";

export interface Advisory {
  name: string;
  severity: Severity;
  /** One line: what is wrong. */
  summary: string;
  /** Why it matters. */
  why: string;
  /** The setting that clears it. */
  setting: string;
  /** What to set it to. */
  remedy: string;
  /** Nodes concerned, for multi-node advisories. */
  nodes?: string[];
}

const rank: Record<Severity, number> = { critical: 0, warning: 1 };

/**
 * Every advisory the current configuration raises, most severe first. Reads settings, the
 * nodes' heartbeats and what `observed` found by asking the nodes only: observing it changes nothing and never shows a value of a secret.
 */
export function computePosture(s: Settings, nodes: Heartbeat[], own: { fingerprint: string; settings: Record<string, string> }, observed: Advisory[] = []): Advisory[] {
  // Advisories found by asking the nodes (content-check.ts), sorted in with the rest.
  const out: Advisory[] = [...observed];
  if (!s.auth) {
    out.push({
      name: "svc.auth.open",
      severity: "critical",
      summary: "Authentication is off: every request is served without a key, writes included",
      why: "Anyone who can reach the port can read, publish and delete artifacts and administer the server.",
      setting: "svc.auth",
      remedy: "set svc.auth=true and give every client its own key",
    });
  }
  if (s.profile === "dev") {
    out.push({
      name: "svc.profile.dev",
      severity: "critical",
      summary: "The dev profile is active",
      why: "It adds built-in accounts with known passwords; it is meant for a developer's own machine only.",
      setting: "svc.profile",
      remedy: "unset svc.profile",
    });
  }
  if (s.auth && s.anonymousRights.length > 0) {
    let bits = 0;
    for (const g of s.anonymousRights) {
      const t = parseTokens(g.tokens);
      if (t.ok) bits |= t.bits;
    }
    const writes = bits & (Right.repositoryWrite | Right.cacheWrite | Right.manageWrite | Right.manageRead);
    if (writes) {
      out.push({
        name: "svc.anonymous.write",
        severity: "critical",
        summary: "Keyless callers may write or administer",
        why: "Anyone who can reach the port can publish, delete or change the server without a key.",
        setting: "svc.anonymous-rights",
        remedy: "keep svc.anonymous-rights to read rights (or blank) and issue keys for writers",
      });
    }
    if (bits & (Right.repositoryRead | Right.cacheRead)) {
      out.push({
        name: "svc.anonymous.read",
        severity: "warning",
        summary: "Keyless callers may read",
        why: "Artifacts are readable by anyone who can reach the port; right for a public mirror, wrong for private code.",
        setting: "svc.anonymous-rights",
        remedy: "blank svc.anonymous-rights unless this is meant to be a public mirror",
      });
    }
  }
  if (s.auth && s.repositoryScopeFromPath) {
    out.push({
      name: "svc.repository-scope.from-path",
      severity: "warning",
      summary: "Artifact requests without Service-Repository-Name are authorised against the repository their path names",
      why: "The spec's rule (a request without the header is authorised against *) is relaxed on every repository at once, also where every client can send the header: a key granted one repository can use it by its URL alone. A grant never reaches another repository, but a proxy or tool that rewrites paths between repositories changes what a key may reach.",
      setting: "svc.repository-scope-from-path",
      remedy:
        'set svc.repository-scope-from-path=false and switch on scopeFromPath only on the repositories whose clients cannot send the header (npm, pnpm, yarn, pip, twine): PATCH /api/repositories/<name> {"scopeFromPath": true}, or the repository\'s page in the console; clients that can send Service-Repository-Name need neither',
    });
  }
  if (s.malwareAction === "ALLOW") {
    out.push({
      name: "svc.malware.allow",
      severity: "critical",
      summary: `Artifacts found to carry malware are served (tenant ${s.tenant})`,
      why: "A build would fetch and run code already known to be malicious.",
      setting: "svc.malware-action",
      remedy: "set svc.malware-action=BLOCK",
    });
  }
  if (s.vulnerabilityAction === "ALLOW") {
    out.push({
      name: "svc.vulnerability.allow",
      severity: "warning",
      summary: `Artifacts with known vulnerabilities are served without a check (tenant ${s.tenant})`,
      why: "Builds can take in components with published vulnerabilities without anyone being told.",
      setting: "svc.vulnerability-action",
      remedy: "set svc.vulnerability-action=BLOCK or WARN",
    });
  }
  if (s.vulnerabilityThreshold === "NONE") {
    out.push({
      name: "svc.vulnerability.threshold-none",
      severity: "warning",
      summary: `The vulnerability check is switched off (tenant ${s.tenant})`,
      why: "No severity of vulnerability stops or flags an artifact.",
      setting: "svc.vulnerability-threshold",
      remedy: "set svc.vulnerability-threshold=HIGH (or another level)",
    });
  }
  if (s.denyListAction === "ALLOW") {
    out.push({
      name: "svc.deny-list.allow",
      severity: "warning",
      summary: `The deny list is ignored (tenant ${s.tenant})`,
      why: "Components an operator has banned are served like any other.",
      setting: "svc.deny-list-action",
      remedy: "set svc.deny-list-action=BLOCK",
    });
  }
  if (!s.blockPrivateImportHosts) {
    out.push({
      name: "svc.import.private-hosts",
      severity: "warning",
      summary: "Proxy repositories and imports may reach internal addresses or travel unencrypted",
      why: "A proxy repository's upstream or an import URL could be used to reach services inside the network (server-side request forgery) or be tampered with in transit.",
      setting: "svc.block-private-import-hosts",
      remedy: "set svc.block-private-import-hosts=true",
    });
  }
  if (s.webhookAllowInternal) {
    out.push({
      name: "svc.webhook.allow-internal",
      severity: "warning",
      summary: "Webhooks may go to internal addresses and over plain http",
      why: "Whoever can set a webhook endpoint can make the notifier send requests into the network (loopback, private and link-local addresses, cloud metadata services), and deliveries travel unencrypted.",
      setting: "svc.webhook-allow-internal",
      remedy: "set svc.webhook-allow-internal=false and give webhook receivers a public https address",
    });
  }
  // Read from this node's own settings, and from the heartbeats of nodes that hold it (auth
  // provisions it; other nodes need not be given it). Said nothing of while authentication is
  // off: svc.auth.open already covers every right.
  const bootstrapNodes = nodes.filter((n) => n.status["bootstrap-key"] === "set").map((n) => n.node).sort();
  if (s.auth && (s.bootstrapKey || bootstrapNodes.length > 0)) {
    out.push({
      name: "svc.bootstrap-key.set",
      severity: "warning",
      summary: "svc.bootstrap-key is set: a key with every right on every repository that never expires is provisioned on every start",
      why: "Anyone who learns it (it sits in the deployment's configuration) can read, publish, delete and administer everything, for ever; revoking it lasts only until the next restart.",
      setting: "svc.bootstrap-key",
      remedy: "issue real keys with it, then unset svc.bootstrap-key, restart, and revoke its entry",
      ...(bootstrapNodes.length > 0 ? { nodes: bootstrapNodes } : {}),
    });
  }
  // A plain-http issuer is accepted on loopback only (the console refuses it elsewhere): still worth a warning.
  const plainIssuerNodes = nodes.filter((n) => n.status["oidc-issuer"] === "plain-http").map((n) => n.node).sort();
  if (s.uiOidcIssuerUri.startsWith("http:") || plainIssuerNodes.length > 0) {
    out.push({
      name: "svc.ui.oidc.plain-http",
      severity: "warning",
      summary: "The console signs people in through a plain-http OpenID Connect issuer",
      why: "Sign-in answers travel unencrypted and unauthenticated; it is accepted on a loopback address only, for local runs.",
      setting: "svc.ui.oidc.issuer-uri",
      remedy: "use the issuer's https URL (its CA through NODE_EXTRA_CA_CERTS)",
      ...(plainIssuerNodes.length > 0 ? { nodes: plainIssuerNodes } : {}),
    });
  }
  // The screening gate's advisory data: an artifacts node reports a source it cannot read (the gate goes on with the last good data).
  const unreadableNodes = nodes.filter((n) => n.status.advisories === "unreadable").map((n) => n.node).sort();
  if (unreadableNodes.length > 0) {
    out.push({
      name: "svc.advisories.unreadable",
      severity: "warning",
      summary: "An advisory source of the screening gate cannot be read",
      why: "The gate goes on screening with the last data it loaded: malware and vulnerabilities published since are not known to it. GET /api/advisories/status names the source, the reason and the data's age.",
      setting: "svc.advisories.sources",
      remedy: "fix or remove the source named in GET /api/advisories/status",
      nodes: unreadableNodes,
    });
  }
  // An object store reached over plain http beyond this machine: the artifacts and walker nodes say so in their heartbeats.
  const plainStoreNodes = nodes.filter((n) => n.status["object-store"] === "plain-http").map((n) => n.node).sort();
  if (plainStoreNodes.length > 0) {
    out.push({
      name: "svc.storage.s3.plain-http",
      severity: "warning",
      summary: "The artifacts are stored in an object store reached over plain http",
      why: "Every artifact, and the object store's signed requests, cross the network unencrypted: anyone on the way reads what is published and may serve other bytes in its place.",
      setting: "svc.storage.s3.endpoint",
      remedy: "use the object store's https endpoint (its CA through NODE_EXTRA_CA_CERTS)",
      nodes: plainStoreNodes,
    });
  }
  if (s.rateLimit === 0) {
    out.push({
      name: "svc.ratelimit.unset",
      severity: "warning",
      summary: "The rate limit is off",
      why: "One client (or a leaked key) can use up the server's capacity for everyone.",
      setting: "svc.rate-limit",
      remedy: "set svc.rate-limit to a ceiling per tenant per minute (default 6000)",
    });
  }

  // Several nodes: they must agree on every deployment-wide setting and the tenant.
  if (nodes.length > 0) {
    const counts = new Map<string, number>();
    for (const n of nodes) counts.set(n.fingerprint, (counts.get(n.fingerprint) ?? 0) + 1);
    counts.set(own.fingerprint, (counts.get(own.fingerprint) ?? 0) + 0.5); // the admin's own view breaks ties
    const majority = [...counts].sort((a, b) => b[1] - a[1])[0]![0];
    const reference = nodes.find((n) => n.fingerprint === majority)?.settings ?? own.settings;
    const odd = nodes.filter((n) => n.fingerprint !== majority);
    if (odd.length > 0) {
      const differing = new Set<string>();
      for (const n of odd) for (const [k, v] of Object.entries(n.settings)) if (reference[k] !== v) differing.add(k);
      out.push({
        name: "svc.nodes.settings-differ",
        severity: "critical",
        summary: `${odd.length} node(s) run with settings or a tenant different from the others: ${[...differing].sort().join(", ")}`,
        why: "Nodes that disagree answer the same request differently: a key refused on one node works on another, or a write refused here is taken there.",
        setting: [...differing].sort().join(", "),
        remedy: "give every node the same value for these settings and restart the odd ones",
        nodes: odd.map((n) => n.node).sort(),
      });
    }
    const lagging = nodes.filter((n) => n.status.nats === "down");
    if (lagging.length > 0) {
      out.push({
        name: "svc.nodes.lagging",
        severity: "warning",
        summary: `${lagging.length} node(s) have stopped catching up with the others' events`,
        why: "A node that misses events keeps serving revoked or narrowed keys until svc.cache.ttl runs out.",
        setting: "svc.nats-url",
        remedy: "restore the node's connection to NATS",
        nodes: lagging.map((n) => n.node).sort(),
      });
    }
    const noRedis = nodes.filter((n) => n.status.redis === "down");
    if (noRedis.length > 0) {
      out.push({
        name: "svc.ratelimit.degraded",
        severity: "warning",
        summary: `${noRedis.length} gateway(s) cannot reach Redis: the rate limit is not enforced there`,
        why: "Requests keep flowing, but no ceiling protects the server from a flood until Redis is back.",
        setting: "svc.redis-url",
        remedy: "restore the gateway's connection to Redis",
        nodes: noRedis.map((n) => n.node).sort(),
      });
    }
  }
  return out.sort((a, b) => rank[a.severity] - rank[b.severity] || a.name.localeCompare(b.name));
}
