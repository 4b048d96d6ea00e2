import { describe, expect, it } from "vitest";
import { ARTIFACT_EVENT_KINDS } from "@svc/contracts";
import { loadSettings } from "./settings.js";
import { parseEndpoints, parseKinds, parseSecrets, parseWebhookSettings, readWebhookSettings, runtimeChangeProblems, splitLines } from "./webhook-settings.js";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

describe("svc.webhook-endpoints", () => {
  it("reads one endpoint a line, separated by newlines or semicolons, skipping blanks and # comments", () => {
    const text = "# receivers\nhttps://a.example/hook none\n\nhttps://b.example/x published, removed;https://c.example artifact.held artifact.finding";
    const r = parseEndpoints(text, false);
    expect(r.problems).toEqual([]);
    expect(r.endpoints).toEqual([
      { url: "https://a.example/hook", kinds: [...ARTIFACT_EVENT_KINDS], allEvents: true },
      { url: "https://b.example/x", kinds: ["artifact.published", "artifact.removed"], allEvents: false },
      { url: "https://c.example/", kinds: ["artifact.held", "artifact.finding"], allEvents: false },
    ]);
  });

  it("numbers lines counting semicolon-separated entries", () => {
    expect(splitLines("a;b\n\nc").map((l) => [l.n, l.text])).toEqual([
      [1, "a"],
      [2, "b"],
      [4, "c"],
    ]);
  });

  it("accepts catalog and short kind names in any case, and none for every event", () => {
    expect(parseKinds(["Artifact.Published", "released"])).toEqual({ ok: true, kinds: ["artifact.published", "artifact.released"], allEvents: false });
    expect(parseKinds(["none"])).toMatchObject({ ok: true, allEvents: true });
    expect(parseKinds(["NONE"])).toMatchObject({ ok: true, allEvents: true });
  });

  it("names the bad line and says what is wrong", () => {
    const text = [
      "https://ok.example/a none",
      "http://plain.example/b none",
      "https://nokinds.example/c",
      "https://bad.example/d published,deleted",
      "not a url",
      "https://ok.example/a published",
      "https://both.example none published",
      "https://user:hunter2@creds.example/e none",
      "https://frag.example/f#x none",
    ].join("\n");
    const r = parseEndpoints(text, false);
    expect(r.endpoints.map((e) => e.url)).toEqual(["https://ok.example/a"]);
    expect(r.problems).toEqual([
      expect.stringMatching(/^line 2 "http:\/\/plain.example\/… none": .*must be an https URL/),
      expect.stringMatching(/^line 3 .*follow the URL with the events it wants/),
      expect.stringMatching(/^line 4 .*unknown event "deleted" \(known: artifact.published/),
      expect.stringMatching(/^line 5 .*is not a URL/),
      expect.stringMatching(/^line 6 .*https:\/\/ok.example\/… is already listed on line 1/),
      expect.stringMatching(/^line 7 .*none means every event and cannot be combined/),
      expect.stringMatching(/^line 8 .*must not carry a user or password/),
      expect.stringMatching(/^line 9 .*must not have a #fragment/),
    ]);
    expect(r.problems.join("\n")).not.toContain("hunter2");
  });

  it("never quotes a receiver's token from a URL's path or query in a problem", () => {
    const text = ["http://hooks.slack.com/services/T000/B000/XXXXSECRET none", "https://example.com/hook?token=SECRET published,deleted"].join("\n");
    const r = parseEndpoints(text, false);
    expect(r.problems).toEqual([
      expect.stringMatching(/^line 1 "http:\/\/hooks\.slack\.com\/… none": .*must be an https URL/),
      expect.stringMatching(/^line 2 "https:\/\/example\.com\/… published,deleted": .*unknown event "deleted"/),
    ]);
    expect(r.problems.join("\n")).not.toMatch(/XXXXSECRET|T000|token=SECRET/);
  });

  it("refuses endpoints written as internal addresses unless internal ones are allowed", () => {
    const text = [
      "https://127.0.0.1/a none",
      "https://10.0.0.5/b none",
      "https://[::1]/c none",
      "https://169.254.169.254/latest none",
      "https://[fd00:ec2::254]/d none",
      "https://[::ffff:127.0.0.1]/e none",
      "https://2130706433/f none",
      "https://0x7f.1/g none",
      "https://93.184.216.34/ok none",
    ].join("\n");
    const refused = parseEndpoints(text, false);
    expect(refused.endpoints.map((e) => e.url)).toEqual(["https://93.184.216.34/ok"]);
    expect(refused.problems).toEqual([
      expect.stringMatching(/^line 1 .*127\.0\.0\.1 is in the loopback range; only public addresses are allowed unless svc.webhook-allow-internal=true/),
      expect.stringMatching(/^line 2 .*10\.0\.0\.5 is in the private range/),
      expect.stringMatching(/^line 3 .*::1 is in the loopback range/),
      expect.stringMatching(/^line 4 .*169\.254\.169\.254 is in the cloud metadata range/),
      expect.stringMatching(/^line 5 .*fd00:ec2::254 is in the cloud metadata range/),
      expect.stringMatching(/^line 6 .*::ffff:7f00:1 is in the loopback range \(IPv4-mapped 127\.0\.0\.1\)/),
      // The URL parser reads numeric and hex IPv4 forms as the address they are.
      expect.stringMatching(/^line 7 .*127\.0\.0\.1 is in the loopback range/),
      expect.stringMatching(/^line 8 .*127\.0\.0\.1 is in the loopback range/),
    ]);
    const allowed = parseEndpoints(text + "\nhttp://localhost:8080/h none", true);
    expect(allowed.problems).toEqual([]);
    expect(allowed.endpoints).toHaveLength(10);
  });
});

describe("svc.webhook-secrets", () => {
  const endpoints = parseEndpoints("https://a.example/hook none\nhttps://b.example/x published", false).endpoints;

  it("reads <URL> <secret> lines and keys them by the endpoint URL as written in the endpoints", () => {
    const r = parseSecrets(`https://a.example/hook ${SECRET}; https://B.example/x a-raw-secret-of-enough-bytes`, endpoints);
    expect(r.problems).toEqual([]);
    expect(r.keys.get("https://a.example/hook")?.length).toBe(24);
    expect(r.keys.get("https://b.example/x")?.toString()).toBe("a-raw-secret-of-enough-bytes");
  });

  it("names the bad line without ever quoting a secret", () => {
    const text = [
      `https://a.example/hook ${SECRET}`,
      "https://a.example/hook second-secret-xxxxxxxxxxxx",
      "https://nobody.example/ some-secret-xxxxxxxxxxxxxxx",
      "https://b.example/x short",
      "https://b.example/x two words-xxxxxxxxxxxxxxxxx",
      "justasecretxxxxxxxxxxxxxxxxxxx",
    ].join("\n");
    const r = parseSecrets(text, endpoints);
    expect(r.problems).toEqual([
      "line 2: a second secret for https://a.example/… (the first is on line 1)",
      "line 3: https://nobody.example/ is not one of the endpoints in svc.webhook-endpoints",
      "line 4 (https://b.example/…): the secret must be at least 16 bytes",
      'line 5: expected "<endpoint URL> <secret>" (the secret may not contain spaces)',
      'line 6: expected "<endpoint URL> <secret>" (the secret may not contain spaces)',
    ]);
    const all = r.problems.join("\n");
    for (const s of ["second-secret", "some-secret", "short", "words-", "justasecret"]) expect(all).not.toContain(s);
  });
});

describe("both settings together", () => {
  it("prefix each problem with the setting and where it came from, and attach keys to endpoints", () => {
    const r = parseWebhookSettings({
      endpoints: "https://a.example/hook none\nftp://x none",
      secrets: `https://a.example/hook ${SECRET}\nhttps://zzz.example/ ${SECRET}`,
      allowInternal: false,
      sourceOf: (n) => `environment ${n.toUpperCase().replace(/[.-]/g, "_")}`,
    });
    expect(r.problems).toEqual([
      expect.stringMatching(/^svc\.webhook-endpoints \(from environment SVC_WEBHOOK_ENDPOINTS\) line 2 "ftp:\/\/x none": /),
      "svc.webhook-secrets (from environment SVC_WEBHOOK_SECRETS) line 2: https://zzz.example/ is not one of the endpoints in svc.webhook-endpoints",
    ]);
    expect(r.endpoints[0]?.key?.length).toBe(24);
  });
});

describe("a run-time change of a webhook setting", () => {
  const inForce = () => loadSettings({ argv: [], env: { SVC_INTERNAL_SECRET: "s".repeat(32), SVC_WEBHOOK_ENDPOINTS: "https://a.example/hook none" } });

  it("is checked with the other webhook settings in force, as the notifier checks them at start", () => {
    expect(runtimeChangeProblems("webhookEndpoints", "https://b.example/x published", inForce())).toEqual([]);
    expect(runtimeChangeProblems("webhookEndpoints", "https://b.example/x pubished", inForce())).toEqual([
      expect.stringMatching(/^svc\.webhook-endpoints \(from the value sent\) line 1 .*unknown event "pubished"/),
    ]);
    // Plain http on loopback only with svc.webhook-allow-internal; the same list passes once it is on.
    expect(runtimeChangeProblems("webhookEndpoints", "http://127.0.0.1:9/hook none", inForce())).toEqual([expect.stringContaining("must be an https URL")]);
    expect(runtimeChangeProblems("webhookEndpoints", "http://127.0.0.1:9/hook none", { ...inForce(), webhookAllowInternal: true })).toEqual([]);
    // A secret for an endpoint not listed, and a short one, are refused without echoing the secret.
    const short = runtimeChangeProblems("webhookSecrets", "https://a.example/hook tooshort", inForce());
    expect(short).toEqual([expect.stringMatching(/^svc\.webhook-secrets \(from the value sent\) line 1 .*at least 16 bytes/)]);
    expect(short.join()).not.toContain("tooshort");
    expect(runtimeChangeProblems("webhookSecrets", `https://c.example/ ${SECRET}`, inForce())).toEqual([expect.stringContaining("is not one of the endpoints")]);
    // Turning allow-internal off under an internal endpoint would not start either; the endpoints' source is named.
    const internal = { ...inForce(), webhookEndpoints: "http://127.0.0.1:9/hook none", webhookAllowInternal: true };
    expect(runtimeChangeProblems("webhookAllowInternal", false, internal)).toEqual([expect.stringMatching(/^svc\.webhook-endpoints \(from environment SVC_WEBHOOK_ENDPOINTS\) line 1 .*must be an https URL/)]);
    expect(runtimeChangeProblems("webhookTimeoutMs", 5, inForce())).toEqual([expect.stringMatching(/^svc\.webhook-timeout \(from the value sent\) must be a duration from 100 ms/)]);
    // Any other setting has nothing to be checked with.
    expect(runtimeChangeProblems("rateLimit", 0, inForce())).toEqual([]);
  });

  it("reads the settings into what the notifier applies", () => {
    const r = readWebhookSettings({ ...inForce(), webhook: true, webhookSecrets: `https://a.example/hook ${SECRET}` });
    expect(r.problems).toEqual([]);
    expect(r.config).toMatchObject({ enabled: true, retries: 5, retryBaseMs: 30_000, timeoutMs: 10_000 });
    expect(r.config.endpoints.map((e) => [e.url, e.key !== undefined])).toEqual([["https://a.example/hook", true]]);
  });
});
