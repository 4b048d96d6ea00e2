import { describe, expect, it } from "vitest";
import { censored, defaultAuditAction } from "./audit-trail.js";

describe("audit trail entries", () => {
  it("name a change no service named after its path and method", () => {
    expect(defaultAuditAction("PATCH", "/api/build-caches/:name")).toBe("build-caches.change");
    expect(defaultAuditAction("POST", "/api/walks")).toBe("walks.create");
    expect(defaultAuditAction("POST", "/api/walks/run")).toBe("walks.run");
    expect(defaultAuditAction("POST", "/api/held/:id/release")).toBe("held.release");
    expect(defaultAuditAction("DELETE", "/api/groups/:name/grants/*")).toBe("groups.grants.remove");
    expect(defaultAuditAction("PUT", "/api/rate-limits/:tenant")).toBe("rate-limits.set");
  });

  it("keep no secret of the request: secret fields censored, URL passwords and keys masked", () => {
    const kept = censored({
      name: "proxy",
      upstream: { url: "https://bob:hunter2@registry.example/", password: "hunter2", token: "t0k" },
      secret: "whsec_abc",
      note: "svck_default.abcdefghijklmnop",
      tokens: ["repository:read"],
    });
    const text = JSON.stringify(kept);
    expect(text).not.toContain("hunter2");
    expect(text).not.toContain("t0k");
    expect(text).not.toContain("whsec_abc");
    expect(text).not.toContain("abcdefghijklmnop");
    // Right tokens are no secret: a grant's tokens stay readable.
    expect(kept).toMatchObject({ name: "proxy", tokens: ["repository:read"], upstream: { password: "[redacted]" } });
  });
});
