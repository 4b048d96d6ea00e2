import { describe, expect, it } from "vitest";
import { homeOverview } from "./home-page.js";
import type { ApiResult, PageContext } from "./page-contract.js";

const series = (requests: number, errors: number, storage: number[]) => ({
  from: "2026-11-29T12:00:00.000Z",
  to: "2026-11-29T13:00:00.000Z",
  stepSeconds: 60,
  points: storage.map((s, i) => ({ time: `2026-11-29T12:0${i}:00.000Z`, requests: requests / storage.length, errors: errors / storage.length, latencyMs: 4, storageBytes: s })),
  totals: { requests, errors },
});

const ANSWERS: Record<string, Partial<ApiResult>> = {
  "GET /api/metrics/series?window=1h": { body: series(40, 2, [3072]) },
  "GET /api/metrics/series?window=24h": { body: series(400, 4, [1024, 2048, 3072]) },
  "GET /api/repositories?limit=500": { body: [{ name: "libs", format: "npm", type: "hosted", usedBytes: 3072 }] },
  "GET /api/repositories/libs": { body: { name: "libs", artifacts: 7 } },
  "GET /api/metrics/publishes?limit=10": { body: [{ time: "2026-11-29T12:30:00.000Z", repository: "libs", path: "left-pad/-/left-pad-1.0.0.tgz", size: 1024, actor: "person:dev/admin" }] },
  "GET /api/credentials?expiring=P14D&limit=10": { body: [{ id: "ab".repeat(32), label: "ci <bot>", expires: "2026-12-01T00:00:00.000Z" }] },
  "GET /api/metrics/nodes": { body: [{ node: "gateway@h:1", service: "gateway", started: "2026-11-29T11:00:00.000Z", lastHeard: "2026-11-29T12:59:58.000Z", status: { nats: "up", redis: "down" } }, { node: "auth@h:2", service: "auth", started: "2026-11-29T11:00:00.000Z", lastHeard: "2026-11-29T12:59:58.000Z", status: { nats: "up", "bootstrap-key": "set" } }] },
  "GET /health/ready": { status: 503, body: { status: "down", checks: { redis: { status: "down" } } } },
};

function context(answers: Record<string, Partial<ApiResult>>, query: Record<string, string> = {}): PageContext {
  return {
    person: { id: "dev/viewer", tenant: "default" },
    async api(method, path) {
      const a = answers[`${method} ${path}`];
      if (!a) throw new Error(`unexpected call ${method} ${path}`);
      return { status: 200, headers: {}, body: undefined, ...a } as ApiResult;
    },
    subpath: "",
    query,
    form: {},
    csrf: "tok",
    may: (right) => right === "manage:read",
    options: { deployEnabled: false, publicBaseUrl: "" },
  };
}

describe("the home page's overview", () => {
  it("shows every part, each linking to its page", async () => {
    const html = (await homeOverview(context(ANSWERS), 3)).text;
    expect(html).toContain('<p id="advisory-count"><strong>3</strong> security advisories.</p>');
    expect(html).toContain('<figure class="chart" id="home-requests">');
    expect(html).toMatch(/<th scope="row">Last hour<\/th><td class="num">40<\/td><td class="num">2<\/td><td class="num">5.0 %<\/td>/);
    expect(html).toMatch(/<th scope="row">Last day<\/th><td class="num">400<\/td><td class="num">4<\/td>/);
    expect(html).toContain('<a href="/ui/repositories/libs">libs</a></th><td>npm</td><td>hosted</td><td class="num">7</td><td class="num">3.0 KiB</td>');
    expect(html).toMatch(/<strong>3.0 KiB<\/strong> used by 1 repository; grown by <strong>2.0 KiB<\/strong> since 2026-11-29 12:00 UTC/);
    expect(html).toContain("<code>left-pad/-/left-pad-1.0.0.tgz</code>");
    expect(html).toContain("“ci &lt;bot&gt;”");
    expect(html).toMatch(/<code>gateway@h:1<\/code><\/td><td><span class="severity-warning">redis: down<\/span>/);
    expect(html).toContain("The deployment is down: redis down");
    expect(html).toMatch(/<code>auth@h:2<\/code><\/td><td>ok<\/td>/);
    for (const href of ["/ui/posture", "/ui/metrics", "/ui/repositories", "/ui/credentials?expiring=soon"]) expect(html).toContain(`<a href="${href}">`);
    expect(html).not.toMatch(/<form method="post"/);
  });

  it("keeps showing the other parts when one does not answer", async () => {
    const html = (await homeOverview(context({ ...ANSWERS, "GET /api/metrics/publishes?limit=10": { status: 503, body: { title: "Service unavailable", detail: "admin is starting" } } }), 0)).text;
    expect(html).toContain("Not available: admin is starting");
    expect(html).toContain('<figure class="chart" id="home-requests">');
    expect(html).toContain("nothing to act on");
  });

  it("charts the last day when asked", async () => {
    const html = (await homeOverview(context(ANSWERS, { window: "24h" }), 0)).text;
    expect(html).toContain("over 3 points");
    expect(html).toContain('<a href="/ui/?window=1h">the last hour</a>');
  });
});
