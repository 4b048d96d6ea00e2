import { describe, expect, it } from "vitest";
import { loadSettings, settingsDigest, type Heartbeat } from "@svc/kit";
import { makeKey } from "@svc/keys";
import { computePosture } from "./posture.js";

/** Settings as a node reads them: the defaults, with `svc.x=value` pairs on top. */
const settings = (props: Record<string, string> = {}) => loadSettings({ argv: Object.entries(props).map(([k, v]) => `-D${k}=${v}`), env: {} });

function posture(props: Record<string, string> = {}, nodes: Heartbeat[] = []) {
  const s = settings(props);
  return computePosture(s, nodes, settingsDigest(s));
}

const names = (props: Record<string, string> = {}) => posture(props).map((a) => a.name);

function heartbeat(node: string, props: Record<string, string> = {}, status: Record<string, string> = { nats: "up" }): Heartbeat {
  const s = settings(props);
  return { node, service: node.split("@")[0]!, tenant: s.tenant, started: "2026-03-01T12:00:00Z", at: "2026-03-01T12:00:05Z", ...settingsDigest(s), status };
}

describe("the posture of one node", () => {
  it("raises nothing for the defaults", () => {
    expect(posture()).toEqual([]);
  });

  it.each([
    ["svc.auth", "false", "svc.auth.open", "critical"],
    ["svc.malware-action", "ALLOW", "svc.malware.allow", "critical"],
    ["svc.vulnerability-action", "ALLOW", "svc.vulnerability.allow", "warning"],
    ["svc.vulnerability-threshold", "NONE", "svc.vulnerability.threshold-none", "warning"],
    ["svc.deny-list-action", "ALLOW", "svc.deny-list.allow", "warning"],
    ["svc.block-private-import-hosts", "false", "svc.import.private-hosts", "warning"],
    ["svc.rate-limit", "0", "svc.ratelimit.unset", "warning"],
    ["svc.webhook-allow-internal", "true", "svc.webhook.allow-internal", "warning"],
    ["svc.repository-scope-from-path", "true", "svc.repository-scope.from-path", "warning"],
    ["svc.bootstrap-key", makeKey("default"), "svc.bootstrap-key.set", "warning"],
    ["svc.ui.oidc.issuer-uri", "http://127.0.0.1:9000", "svc.ui.oidc.plain-http", "warning"],
  ])("%s=%s raises %s (%s), naming the setting that clears it", (setting, value, name, severity) => {
    expect(posture({ [setting]: value })).toEqual([expect.objectContaining({ name, severity, setting })]);
  });

  it("an artifacts or walker node reporting a plain-http object store raises svc.storage.s3.plain-http, naming it; https or loopback raise nothing", () => {
    const plain = heartbeat("artifacts@b", {}, { nats: "up", "object-store": "plain-http" });
    const walker = heartbeat("walker@c", {}, { nats: "up", "object-store": "plain-http" });
    expect(posture({}, [plain, walker])).toEqual([expect.objectContaining({ name: "svc.storage.s3.plain-http", severity: "warning", setting: "svc.storage.s3.endpoint", nodes: ["artifacts@b", "walker@c"] })]);
    expect(posture({}, [heartbeat("artifacts@b", {}, { nats: "up" })])).toEqual([]);
  });

  it("an artifacts node reporting an advisory source it cannot read raises svc.advisories.unreadable, naming it", () => {
    const hb = heartbeat("artifacts@b", {}, { nats: "up", advisories: "unreadable" });
    expect(posture({}, [hb])).toEqual([expect.objectContaining({ name: "svc.advisories.unreadable", severity: "warning", setting: "svc.advisories.sources", nodes: ["artifacts@b"] })]);
  });

  it("a console node reporting a plain-http issuer raises svc.ui.oidc.plain-http, naming the node", () => {
    const hb = heartbeat("console@a", {}, { nats: "up", "oidc-issuer": "plain-http" });
    expect(posture({}, [hb])).toEqual([expect.objectContaining({ name: "svc.ui.oidc.plain-http", nodes: ["console@a"] })]);
    expect(posture({ "svc.ui.oidc.issuer-uri": "https://idp.example.com" })).toEqual([]);
  });

  it("the dev profile is critical", () => {
    expect(posture({ "svc.profile": "dev", "svc.host": "127.0.0.1" })).toEqual([expect.objectContaining({ name: "svc.profile.dev", severity: "critical" })]);
  });

  it("WARN is no advisory: only ALLOW lets an artifact through unchecked", () => {
    expect(names({ "svc.malware-action": "WARN", "svc.vulnerability-action": "WARN", "svc.deny-list-action": "WARN" })).toEqual([]);
  });

  it("keyless readers are a warning, keyless writers or administrators critical", () => {
    expect(names({ "svc.anonymous-rights": "repository:read" })).toEqual(["svc.anonymous.read"]);
    expect(names({ "svc.anonymous-rights": "libs=repository:write" })).toEqual(["svc.anonymous.write"]);
    expect(names({ "svc.anonymous-rights": "manage:read" })).toEqual(["svc.anonymous.write"]);
    expect(names({ "svc.anonymous-rights": "*" })).toEqual(["svc.anonymous.write", "svc.anonymous.read"]);
  });

  it("says nothing of anonymous rights while authentication is off: that advisory already covers it", () => {
    expect(names({ "svc.auth": "false", "svc.anonymous-rights": "*" })).toEqual(["svc.auth.open"]);
  });

  it("lists critical advisories first, then by name", () => {
    expect(names({ "svc.rate-limit": "0", "svc.deny-list-action": "ALLOW", "svc.malware-action": "ALLOW", "svc.auth": "false" })).toEqual([
      "svc.auth.open",
      "svc.malware.allow",
      "svc.deny-list.allow",
      "svc.ratelimit.unset",
    ]);
  });

  it("a set bootstrap key is named, never shown, and said nothing of while authentication is off", () => {
    const key = makeKey("default");
    const [a] = posture({ "svc.bootstrap-key": key });
    expect(a).toMatchObject({ name: "svc.bootstrap-key.set", setting: "svc.bootstrap-key", summary: expect.stringContaining("svc.bootstrap-key is set") });
    expect(a!.remedy).toContain("unset svc.bootstrap-key");
    expect(JSON.stringify(a)).not.toContain(key);
    expect(names({ "svc.bootstrap-key": key, "svc.auth": "false" })).toEqual(["svc.auth.open"]);
  });

  it("names the tenant in tenant-wide policy advisories, and never a secret's value", () => {
    const secret = "s".repeat(40);
    const advisories = posture({ "svc.tenant": "acme", "svc.malware-action": "ALLOW", "svc.internal-secret": secret, "svc.auth": "false" });
    expect(advisories.find((a) => a.name === "svc.malware.allow")?.summary).toContain("tenant acme");
    expect(JSON.stringify(advisories)).not.toContain(secret);
  });
});

describe("the posture of a deployment", () => {
  it("is quiet while every node agrees and is connected", () => {
    expect(posture({}, [heartbeat("auth@a:1"), heartbeat("gateway@a:2")])).toEqual([]);
  });

  it("names the odd nodes and the settings they differ in", () => {
    const nodes = [heartbeat("auth@a:1"), heartbeat("gateway@a:2"), heartbeat("gateway@b:3", { "svc.cache.ttl": "10s", "svc.tenant": "other" })];
    expect(posture({}, nodes)).toEqual([
      expect.objectContaining({ name: "svc.nodes.settings-differ", severity: "critical", setting: "svc.cache.ttl, svc.tenant", nodes: ["gateway@b:3"] }),
    ]);
  });

  it("takes the majority as the reference, even against the admin's own settings", () => {
    const nodes = [heartbeat("auth@a:1", { "svc.rate-limit": "100" }), heartbeat("gateway@a:2", { "svc.rate-limit": "100" })];
    expect(posture({}, nodes).map((a) => a.name)).toEqual([]);
  });

  it("warns of a bootstrap key set on the nodes that provision it, naming them, though the admin was not given it", () => {
    const nodes = [heartbeat("auth@a:1", {}, { nats: "up", "bootstrap-key": "set" }), heartbeat("gateway@a:2")];
    expect(posture({}, nodes)).toEqual([expect.objectContaining({ name: "svc.bootstrap-key.set", severity: "warning", setting: "svc.bootstrap-key", nodes: ["auth@a:1"] })]);
  });

  it("warns of nodes cut off from NATS and of gateways without Redis", () => {
    const nodes = [heartbeat("auth@a:1", {}, { nats: "down" }), heartbeat("gateway@a:2", {}, { nats: "up", redis: "down" })];
    expect(posture({}, nodes)).toEqual([
      expect.objectContaining({ name: "svc.nodes.lagging", nodes: ["auth@a:1"] }),
      expect.objectContaining({ name: "svc.ratelimit.degraded", nodes: ["gateway@a:2"] }),
    ]);
  });
});
