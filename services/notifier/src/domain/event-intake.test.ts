import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import type { ArtifactEvent } from "@svc/contracts";
import { parseEndpoints } from "@svc/kit";
import { eventIntakeFactory } from "./event-intake.js";
import { webhookMetricsFactory } from "./webhook-metrics.js";

const event = (kind: ArtifactEvent["kind"]): ArtifactEvent =>
  ({
    kind,
    id: `id-${kind}`,
    time: "2026-03-01T12:00:00.000Z",
    tenant: "default",
    repository: "default",
    path: "a/b.txt",
    size: 3,
    digest: `sha256:${"0".repeat(64)}`,
    actor: { kind: "key", id: "k" },
    ...(kind === "artifact.published" ? { replaced: false } : { reason: "request" }),
  }) as ArtifactEvent;

function setup(enabled = true) {
  const recorded: { event: { id: string; kind: string; payload: string }; endpoints: readonly string[] }[] = [];
  const seen = new Set<string>();
  const woken: string[] = [];
  const { endpoints } = parseEndpoints("https://all.example/ none\nhttps://pub.example/ published\nhttps://rm.example/ removed", false);
  const take = eventIntakeFactory({
    store: {
      async recordEvent(e, eps) {
        recorded.push({ event: e, endpoints: eps });
        const fresh = eps.filter((u) => !seen.has(`${e.id} ${u}`));
        for (const u of eps) seen.add(`${e.id} ${u}`);
        return fresh.length;
      },
    },
    endpoints,
    enabled,
    metrics: webhookMetricsFactory(new Registry()),
    wake: (u) => woken.push(u),
  });
  return { take, recorded, woken };
}

describe("turning an event into deliveries", () => {
  it("records one delivery per endpoint that wants the kind, with the Standard Webhooks payload", async () => {
    const { take, recorded, woken } = setup();
    const e = event("artifact.published");
    expect(await take(e)).toBe("recorded");
    expect(recorded[0]?.endpoints).toEqual(["https://all.example/", "https://pub.example/"]);
    expect(JSON.parse(recorded[0]!.event.payload)).toEqual({ type: "artifact.published", timestamp: e.time, data: e });
    expect(woken).toEqual(["https://all.example/", "https://pub.example/"]);
  });

  it("says so when an event is seen again, and when nobody wants it", async () => {
    const { take } = setup();
    await take(event("artifact.removed"));
    expect(await take(event("artifact.removed"))).toBe("duplicate");
    const onlyAll = setup();
    expect(await onlyAll.take(event("artifact.held"))).toBe("recorded");
    const none = eventIntakeFactory({
      store: { recordEvent: async () => 0 },
      endpoints: parseEndpoints("https://pub.example/ published", false).endpoints,
      enabled: true,
      metrics: webhookMetricsFactory(new Registry()),
      wake: () => {},
    });
    expect(await none(event("artifact.held"))).toBe("unmatched");
  });

  it("records nothing while delivery is off", async () => {
    const { take, recorded } = setup(false);
    expect(await take(event("artifact.published"))).toBe("off");
    expect(recorded).toEqual([]);
  });
});
