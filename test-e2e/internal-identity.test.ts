// Traffic behind the gateway: a signed request captured on the way to an upstream and sent again
// (as is, or with another body) is refused, and the internal secret can be rotated without
// refusals (docs/internals/internal-traffic.md, docs/operations/internal-secret-rotation.md).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyId } from "@svc/keys";
import { identityHeaders } from "@svc/kit";
import { startSuite, type Suite } from "./suite.js";

const previous = "the-previous-internal-secret-of-this-suite";

let s: Suite;
beforeAll(async () => {
  s = await startSuite({ env: { SVC_INTERNAL_SECRET_PREVIOUS: previous } });
});
afterAll(() => s?.stop());

const json = { "content-type": "application/json" };
const admin = () => `key:${s.tenant}:${keyId(s.bootstrapKey)}`;

describe("a captured signed request sent again, straight to an upstream", () => {
  it("grants once: the same request again is refused, and so is its signature with a wider grant as the body", async () => {
    const k = await s.mint({ label: "replay-target" });
    const path = `/api/credentials/${k.id}/grants`;
    const body = JSON.stringify({ scope: "default:libs", tokens: ["repository:read"] });
    const captured = identityHeaders(s.internalSecret, "POST", path, admin(), Date.now(), { body, headers: json });
    expect((await fetch(`${s.urls.auth}${path}`, { method: "POST", headers: captured, body })).status).toBe(200);
    expect((await fetch(`${s.urls.auth}${path}`, { method: "POST", headers: captured, body })).status).toBe(401);

    const another = identityHeaders(s.internalSecret, "POST", path, admin(), Date.now(), { body, headers: json });
    const wider = JSON.stringify({ scope: "*", tokens: ["*"] });
    expect((await fetch(`${s.urls.auth}${path}`, { method: "POST", headers: another, body: wider })).status).toBe(401);

    const shown = await s.call("GET", `/api/credentials/${k.id}`, { key: s.bootstrapKey });
    expect(shown.status).toBe(200);
    expect(JSON.stringify(await shown.json())).not.toMatch(/"scope":"\*"/);
  });

  it("stores nothing from a signed upload sent with another body", async () => {
    const path = "/repository/default/replayed/app.jar";
    const type = { "content-type": "application/octet-stream" };
    // The same signature with its own body is stored: the refusal below is the body's.
    const ok = identityHeaders(s.internalSecret, "PUT", "/repository/default/replayed/ok.jar", admin(), Date.now(), { body: "the signed content", headers: type });
    expect((await fetch(`${s.urls.artifacts}/repository/default/replayed/ok.jar`, { method: "PUT", headers: ok, body: "the signed content" })).status).toBe(201);
    const headers = identityHeaders(s.internalSecret, "PUT", path, admin(), Date.now(), { body: "the signed content", headers: type });
    expect((await fetch(`${s.urls.artifacts}${path}`, { method: "PUT", headers, body: "something else entirely" })).status).toBe(401);
    expect((await s.call("GET", path, { key: s.bootstrapKey })).status).toBe(404);
  });

  it("stores nothing from a signed npm publish or maven-metadata.xml sent with another body", async () => {
    for (const [name, format] of [["replay-npm", "npm"], ["replay-maven", "maven"]]) {
      expect((await s.call("POST", "/api/repositories", { key: s.bootstrapKey, body: { name, format } })).status).toBe(201);
    }
    const put = (path: string, signed: string, sent: string) =>
      fetch(`${s.urls.artifacts}${path}`, { method: "PUT", headers: identityHeaders(s.internalSecret, "PUT", path, admin(), Date.now(), { body: signed, headers: json }), body: sent });
    const publish = (version: string) =>
      JSON.stringify({
        name: "replayed",
        versions: { [version]: { name: "replayed", version } },
        "dist-tags": { latest: version },
        _attachments: { [`replayed-${version}.tgz`]: { content_type: "application/octet-stream", data: Buffer.from(`tarball ${version}`).toString("base64") } },
      });
    // The same signature with its own body is published: the refusal below is the body's.
    expect((await put("/repository/replay-npm/replayed", publish("1.0.0"), publish("1.0.0"))).status).toBe(201);
    expect((await put("/repository/replay-npm/replayed", publish("1.0.1"), publish("6.6.6"))).status).toBe(401);
    const doc = await s.call("GET", "/repository/replay-npm/replayed", { key: s.bootstrapKey });
    expect(Object.keys(((await doc.json()) as { versions: object }).versions)).toEqual(["1.0.0"]);

    const plugins = (prefix: string) => `<?xml version="1.0"?><metadata><plugins><plugin><name>${prefix}</name><prefix>${prefix}</prefix><artifactId>${prefix}-maven-plugin</artifactId></plugin></plugins></metadata>`;
    const metadata = "/repository/replay-maven/com/example/maven-metadata.xml";
    expect((await put(metadata, plugins("signed"), plugins("forged"))).status).toBe(401);
    expect((await s.call("GET", metadata, { key: s.bootstrapKey })).status).toBe(404);
    expect((await put(metadata, plugins("signed"), plugins("signed"))).status).toBe(201);
    expect(await (await s.call("GET", metadata, { key: s.bootstrapKey })).text()).toContain("<prefix>signed</prefix>");
  });
});

describe("rotating the internal secret (svc.internal-secret-previous)", () => {
  it("upstreams accept a request signed with the previous secret beside the current one, and no other", async () => {
    const path = "/api/credentials";
    expect((await fetch(`${s.urls.auth}${path}`, { headers: identityHeaders(previous, "GET", path, admin()) })).status).toBe(200);
    expect((await fetch(`${s.urls.auth}${path}`, { headers: identityHeaders(s.internalSecret, "GET", path, admin()) })).status).toBe(200);
    expect((await fetch(`${s.urls.auth}${path}`, { headers: identityHeaders("x".repeat(40), "GET", path, admin()) })).status).toBe(401);
  });

  it("keeps uploads, downloads and API calls through the gateway working", async () => {
    const put = await s.call("PUT", "/repository/default/rotation/a.txt", { key: s.bootstrapKey, body: "rotated" });
    expect(put.status).toBe(201);
    const got = await s.call("GET", "/repository/default/rotation/a.txt", { key: s.bootstrapKey });
    expect(await got.text()).toBe("rotated");
    expect((await s.call("GET", "/api/credentials", { key: s.bootstrapKey })).status).toBe(200);
  });
});
