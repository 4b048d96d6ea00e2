import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { parseSecret } from "@svc/kit";
import { sign, verify, webhookHeaders } from "./signature.js";

const key = (s: string) => {
  const r = parseSecret(s);
  if (!r.ok) throw new Error(r.reason);
  return r.key;
};

describe("Standard Webhooks signatures", () => {
  it("reproduces the specification's published test vector", () => {
    const k = key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    expect(sign(k, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, '{"test": 2432232314}')).toBe("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
  });

  it("uses a secret without the whsec_ prefix as its UTF-8 bytes", () => {
    const raw = "a plain shared secret of some length";
    const expected = createHmac("sha256", Buffer.from(raw, "utf8")).update("id1.100.{}").digest("base64");
    expect(sign(key(raw), "id1", 100, "{}")).toBe(`v1,${expected}`);
  });

  it("refuses short secrets and a whsec_ secret that is not base64, without echoing it", () => {
    const short = parseSecret("tooshort");
    expect(short.ok).toBe(false);
    expect(JSON.stringify(short)).not.toContain("tooshort");
    expect(parseSecret("whsec_***not-base64***").ok).toBe(false);
    expect(parseSecret("whsec_c2hvcnQ=").ok).toBe(false);
  });

  it("writes webhook-id, webhook-timestamp and, with a key, webhook-signature", () => {
    const k = key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    expect(webhookHeaders(undefined, "e1", 1700000000, "{}")).toEqual({ "webhook-id": "e1", "webhook-timestamp": "1700000000" });
    const h = webhookHeaders(k, "e1", 1700000000, "{}");
    expect(h["webhook-signature"]).toBe(sign(k, "e1", 1700000000, "{}"));
  });

  it("verifies as a receiver would: any listed v1 signature, a fresh timestamp, the exact body", () => {
    const k = key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    const now = 1_700_000_000_000;
    const ts = now / 1000;
    const sig = sign(k, "e1", ts, '{"a":1}');
    const h = { id: "e1", timestamp: String(ts), signature: `v1,bm90IGl0 ${sig}` };
    expect(verify(k, h, '{"a":1}', now)).toBe(true);
    expect(verify(k, h, '{"a":2}', now)).toBe(false);
    expect(verify(k, { ...h, id: "e2" }, '{"a":1}', now)).toBe(false);
    expect(verify(key("another secret, also long enough"), h, '{"a":1}', now)).toBe(false);
    expect(verify(k, h, '{"a":1}', now + 301_000)).toBe(false);
  });
});
