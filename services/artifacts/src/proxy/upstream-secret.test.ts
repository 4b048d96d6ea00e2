import { describe, expect, it } from "vitest";
import { authorizationFor, openCredentials, parseUpstreamCredentials, sealCredentials } from "./upstream-secret.js";

describe("upstream credentials", () => {
  it("seal to text that holds neither the password nor the token, and open again with the same secret", () => {
    const sealed = sealCredentials({ username: "ci", password: "hunter2-pass" }, "server-secret");
    expect(sealed).not.toContain("hunter2");
    expect(sealed.startsWith("v1.")).toBe(true);
    expect(openCredentials(sealed, "server-secret")).toEqual({ username: "ci", password: "hunter2-pass" });
    const token = sealCredentials({ token: "tok-123" }, "server-secret");
    expect(openCredentials(token, "server-secret")).toEqual({ token: "tok-123" });
    expect(sealCredentials({ token: "tok-123" }, "server-secret")).not.toBe(token);
  });

  it("refuse to open with another secret or after tampering, without echoing the secret", () => {
    const sealed = sealCredentials({ token: "tok-123" }, "server-secret");
    expect(() => openCredentials(sealed, "other-secret")).toThrow(/do not open/);
    const parts = sealed.split(".");
    parts[3] = Buffer.from("x" + Buffer.from(parts[3]!, "base64url").toString("latin1"), "latin1").toString("base64url");
    expect(() => openCredentials(parts.join("."), "server-secret")).toThrow(/do not open/);
    expect(() => openCredentials("garbage", "server-secret")).toThrow(/malformed/);
  });

  it("accept only the two documented shapes", () => {
    expect(parseUpstreamCredentials({ token: "t" })).toEqual({ ok: true, credentials: { token: "t" } });
    expect(parseUpstreamCredentials({ username: "u", password: "p" })).toEqual({ ok: true, credentials: { username: "u", password: "p" } });
    for (const bad of [null, "t", [], {}, { token: "" }, { token: "t", username: "u" }, { username: "u" }]) {
      expect(parseUpstreamCredentials(bad).ok).toBe(false);
    }
  });

  it("make Basic and Bearer headers", () => {
    expect(authorizationFor({ token: "abc" })).toBe("Bearer abc");
    expect(authorizationFor({ username: "u", password: "p" })).toBe(`Basic ${Buffer.from("u:p").toString("base64")}`);
  });
});
