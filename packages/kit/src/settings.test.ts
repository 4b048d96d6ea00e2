import { describe, expect, it } from "vitest";
import { makeKey } from "@svc/keys";
import { natsServers } from "./messaging.js";
import { closestName } from "./closest-name.js";
import { SettingsError, envName, loadSettings, parseProperties, unknownEnvironmentSettings } from "./settings.js";

const load = (env: Record<string, string> = {}, argv: string[] = [], files: Record<string, string> = {}) =>
  loadSettings({ env, argv, readFile: (p) => { const f = files[p]; if (f === undefined) throw Object.assign(new Error("nope"), { code: "ENOENT" }); return f; } });

describe("settings", () => {
  it("uses the defaults the spec gives", () => {
    const s = load();
    expect(s.tenant).toBe("default");
    expect(s.repository).toBe("default");
    expect(s.auth).toBe(true);
    expect(s.readOnly).toBe(false);
    expect(s.cacheTtlMs).toBe(300_000);
    expect(s.anonymousRights).toEqual([]);
  });

  it("maps dotted names to SVC_ variables", () => {
    expect(envName("svc.cache.ttl")).toBe("SVC_CACHE_TTL");
    expect(envName("svc.bootstrap-key")).toBe("SVC_BOOTSTRAP_KEY");
  });

  it("prefers -D over the environment over the properties file", () => {
    const files = { "/etc/svc.properties": "svc.tenant = fromfile\nsvc.repository=libs\nsvc.port: 9000\n" };
    const s = load({ SVC_CONFIG_FILE: "/etc/svc.properties", SVC_TENANT: "fromenv", SVC_PORT: "9100" }, ["-Dsvc.tenant=fromarg"], files);
    expect(s.tenant).toBe("fromarg");
    expect(s.port).toBe(9100);
    expect(s.repository).toBe("libs");
    expect(s.sources["svc.tenant"]).toBe("-Dsvc.tenant");
  });

  it("refuses a bad value naming the setting and its source", () => {
    expect(() => load({ SVC_AUTH: "maybe" })).toThrow(/svc\.auth \(from environment SVC_AUTH\) must be true or false/);
    expect(() => load({}, ["-Dsvc.cache.ttl=soon"])).toThrow(/svc\.cache\.ttl/);
    expect(() => load({ SVC_ANONYMOUS_RIGHTS: "repository:delete" })).toThrow(/svc\.anonymous-rights/);
  });

  it("takes one NATS URL or a cluster's URLs separated by commas", () => {
    expect(load({ SVC_NATS_URL: "nats://nats:4222" }).natsUrl).toBe("nats://nats:4222");
    expect(load({ SVC_NATS_URL: "nats://n1:4222, nats://n2:4222 ,tls://n3:4222" }).natsUrl).toBe("nats://n1:4222,nats://n2:4222,tls://n3:4222");
    expect(natsServers("nats://n1:4222,nats://n2:4222")).toEqual(["nats://n1:4222", "nats://n2:4222"]);
    expect(() => load({ SVC_NATS_URL: "nats://n1:4222,http://n2" })).toThrow(/svc\.nats-url .*must be a nats or tls URL \(each entry/);
    expect(() => load({ SVC_NATS_URL: "nats://n1:4222,,nats://n2:4222" })).toThrow(/svc\.nats-url .*empty entry/);
    // Other URL settings stay single.
    expect(() => load({ SVC_REDIS_URL: "redis://a:6379,redis://b:6379" })).toThrow(/svc\.redis-url/);
  });

  it("takes a Postgres pool size from 1 to 200, 0 leaving each service its own", () => {
    expect(load().databasePoolSize).toBe(0);
    expect(load({ SVC_DATABASE_POOL_SIZE: "25" }).databasePoolSize).toBe(25);
    for (const bad of ["201", "-1", "ten", "2.5"]) expect(() => load({ SVC_DATABASE_POOL_SIZE: bad }), bad).toThrow(/svc\.database-pool-size .*from 1 to 200/);
  });

  it("takes a build cache size as bytes or with a binary suffix", () => {
    expect(load().buildCacheMaxBytes).toBe(10 * 2 ** 30);
    expect(load().buildCacheMaxEntryBytes).toBe(100 * 2 ** 20);
    expect(load({ SVC_BUILD_CACHE_MAX_BYTES: "512m" }).buildCacheMaxBytes).toBe(512 * 2 ** 20);
    expect(load({ SVC_BUILD_CACHE_MAX_BYTES: "2GiB" }).buildCacheMaxBytes).toBe(2 * 2 ** 30);
    expect(load({ SVC_BUILD_CACHE_MAX_ENTRY_BYTES: "65536" }).buildCacheMaxEntryBytes).toBe(65536);
    for (const bad of ["0", "-1", "ten", "1.5g", "3x"]) expect(() => load({ SVC_BUILD_CACHE_MAX_BYTES: bad }), bad).toThrow(/svc\.build-cache\.max-bytes .*size in bytes/);
  });

  it("refuses a malformed bootstrap key without echoing it", () => {
    const good = makeKey();
    const bad = good.slice(0, -1) + (good.endsWith("A") ? "B" : "A");
    try {
      load({ SVC_BOOTSTRAP_KEY: bad });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(SettingsError);
      expect((err as Error).message).toMatch(/svc\.bootstrap-key .* is not a well-formed key/);
      expect((err as Error).message).not.toContain(bad.slice(10, 40));
    }
  });

  it("refuses a bootstrap key of another tenant", () => {
    expect(() => load({ SVC_BOOTSTRAP_KEY: makeKey("other") })).toThrow(/tenant "other" but svc.tenant is "default"/);
    expect(load({ SVC_BOOTSTRAP_KEY: makeKey("acme"), SVC_TENANT: "acme" }).tenant).toBe("acme");
  });

  it("refuses unknown svc. settings in -D arguments and properties files", () => {
    expect(() => load({}, ["-Dsvc.cahce.ttl=5"])).toThrow(/svc\.cahce\.ttl \(-D argument\): unknown setting/);
  });

  it("names the setting a misspelt -D argument or properties-file key most likely meant", () => {
    expect(() => load({}, ["-Dsvc.repository-scope-from-pth=true"])).toThrow(
      "svc.repository-scope-from-pth (-D argument): unknown setting; did you mean svc.repository-scope-from-path?",
    );
    // A slip in the prefix is a -D setting of ours too.
    expect(() => load({}, ["-Dsvx.read-only=true"])).toThrow("svx.read-only (-D argument): unknown setting; did you mean svc.read-only?");
    expect(() => load({ SVC_CONFIG_FILE: "/etc/svc.properties" }, [], { "/etc/svc.properties": "svc.shutdown-gracee=5s\nother.tool=1\n" })).toThrow(
      /svc\.shutdown-gracee \(properties file \/etc\/svc\.properties\): unknown setting; did you mean svc\.shutdown-grace\?/,
    );
    // Nothing near enough: no guess.
    expect(() => load({}, ["-Dsvc.something-else-entirely=1"])).toThrow(/svc\.something-else-entirely \(-D argument\): unknown setting$/m);
  });

  it("lists SVC_ environment variables that are no setting, with the closest one, without refusing", () => {
    const env = { SVC_REPOSITORY_SCOPE_FROM_PTH: "true", SVC_TENANT: "acme", SVC_URL: "http://x", SVC_DATA_DIR: "/d", PATH: "/bin", SVC_QWERTYUIOP_ASDF: "1" };
    expect(load(env).repositoryScopeFromPath).toBe(false);
    expect(unknownEnvironmentSettings(env)).toEqual([
      "environment variable SVC_QWERTYUIOP_ASDF is not a setting and is ignored",
      "environment variable SVC_REPOSITORY_SCOPE_FROM_PTH is not a setting and is ignored; did you mean SVC_REPOSITORY_SCOPE_FROM_PATH (svc.repository-scope-from-path)?",
    ]);
    expect(unknownEnvironmentSettings({ SVC_TENANT: "a", SVC_KEY: "k", SVC_TEST_VERBOSE: "1" })).toEqual([]);
  });

  it("suggests only a name near enough to be a slip", () => {
    expect(closestName("svc.read-onyl", ["svc.read-only", "svc.port"])).toBe("svc.read-only");
    expect(closestName("svc.tennant", ["svc.tenant", "svc.port"])).toBe("svc.tenant");
    expect(closestName("svc.colour", ["svc.tenant", "svc.port"])).toBeUndefined();
  });

  it("refuses a * entry in svc.ui.admins and anything that is not a person id", () => {
    expect(() => load({ SVC_UI_ADMINS: "oidc/alice, *" })).toThrow(/svc\.ui\.admins .* a \* entry would make everyone an administrator/);
    expect(() => load({ SVC_UI_ADMINS: "alice" })).toThrow(/entry "alice" is not a person id/);
    expect(load({ SVC_UI_ADMINS: "oidc/alice, oauth/42,oidc/alice" }).uiAdmins).toEqual(["oidc/alice", "oauth/42"]);
  });

  it("reads trusted proxies as addresses and CIDRs", () => {
    expect(load({ SVC_TRUSTED_PROXIES: "10.0.0.0/8, ::1" }).trustedProxies).toEqual(["10.0.0.0/8", "::1"]);
    expect(() => load({ SVC_TRUSTED_PROXIES: "proxy.local" })).toThrow(/svc\.trusted-proxies .* entry "proxy.local"/);
  });

  it("names an unreadable properties file", () => {
    expect(() => load({ SVC_CONFIG_FILE: "/missing" })).toThrow(/cannot read "\/missing": ENOENT/);
  });
});

describe("properties files", () => {
  it("reads comments, separators, escapes and continuations", () => {
    const p = parseProperties("# c\n! c\nsvc.a=1\nsvc.b : two words\nsvc.c three\nsvc.d=long \\\n   value\nsvc\\:e=x\n");
    expect(Object.fromEntries(p)).toEqual({ "svc.a": "1", "svc.b": "two words", "svc.c": "three", "svc.d": "long value", "svc:e": "x" });
  });
});
