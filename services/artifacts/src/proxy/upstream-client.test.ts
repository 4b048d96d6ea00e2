import { describe, expect, it } from "vitest";
import { upstreamGet, UpstreamUnreachable } from "./upstream-client.js";

describe("upstream client", () => {
  it("with block-private-import-hosts on, refuses plain http, an IP literal and a name that resolve to non-public addresses, before sending anything", async () => {
    await expect(upstreamGet("http://93.184.216.34/pkg", { blockPrivate: true })).rejects.toThrow(/plain http is refused/);
    await expect(upstreamGet("https://127.0.0.1:9/pkg", { blockPrivate: true })).rejects.toThrow(/127\.0\.0\.1 is in the loopback range/);
    await expect(upstreamGet("https://[::ffff:169.254.169.254]:9/pkg", { blockPrivate: true })).rejects.toThrow(/cloud metadata/);
    // Resolved where the connection is made: localhost's addresses are loopback ones.
    const named = upstreamGet("https://localhost:9/pkg", { blockPrivate: true });
    await expect(named).rejects.toBeInstanceOf(UpstreamUnreachable);
    await expect(named).rejects.toThrow(/localhost: .*loopback range.*block-private-import-hosts/);
  });

  it("a refused connection is an unreachable upstream, never an answer", async () => {
    await expect(upstreamGet("http://127.0.0.1:9/pkg", { blockPrivate: false, timeoutMs: 2000 })).rejects.toBeInstanceOf(UpstreamUnreachable);
  });
});
