import { describe, expect, it } from "vitest";
import { addressMatcher, clientAddress, parseAddressList } from "./addresses.js";

describe("address lists", () => {
  it("reads addresses and CIDRs, IPv4 and IPv6, normalised", () => {
    expect(parseAddressList("10.0.0.1, 192.168.0.0/16,2001:DB8::/32 , ::ffff:10.1.2.3")).toEqual({
      ok: true,
      entries: ["10.0.0.1", "192.168.0.0/16", "2001:db8::/32", "10.1.2.3"],
    });
    expect(parseAddressList("  ")).toEqual({ ok: true, entries: [] });
  });

  it("names the bad entry", () => {
    expect(parseAddressList("10.0.0.1, 10.0.0.300")).toMatchObject({ ok: false, bad: "10.0.0.300" });
    expect(parseAddressList("10.0.0.0/33")).toMatchObject({ ok: false, bad: "10.0.0.0/33" });
    expect(parseAddressList("2001:db8::/129")).toMatchObject({ ok: false });
    expect(parseAddressList("example.com")).toMatchObject({ ok: false, bad: "example.com" });
    expect(parseAddressList("10.0.0.0/x")).toMatchObject({ ok: false });
  });

  it("refuses what it would otherwise have to guess at: spaces between entries, zones, empty entries", () => {
    expect(parseAddressList("1.2.3.4 5.6.7.8")).toMatchObject({ ok: false, bad: "1.2.3.4 5.6.7.8", reason: expect.stringMatching(/commas/) });
    expect(parseAddressList("fe80::1%eth0")).toMatchObject({ ok: false, bad: "fe80::1%eth0", reason: expect.stringMatching(/zone/) });
    expect(parseAddressList("fe80::%25eth0/64")).toMatchObject({ ok: false });
    expect(parseAddressList("10.0.0.1,,10.0.0.2")).toMatchObject({ ok: false });
    expect(parseAddressList("10.0.0.1,")).toMatchObject({ ok: false });
  });

  it("matches addresses inside a block and nothing else", () => {
    const m = addressMatcher(["10.0.0.0/8", "192.168.1.7", "2001:db8::/32"]);
    expect(m("10.200.3.4")).toBe(true);
    expect(m("::ffff:10.200.3.4")).toBe(true);
    expect(m("11.0.0.1")).toBe(false);
    expect(m("192.168.1.7")).toBe(true);
    expect(m("192.168.1.8")).toBe(false);
    expect(m("2001:db8:1::5")).toBe(true);
    expect(m("2001:db9::5")).toBe(false);
    expect(m("not an ip")).toBe(false);
    expect(addressMatcher([])("10.0.0.1")).toBe(false);
  });
});

describe("client address", () => {
  const trusted = addressMatcher(["127.0.0.1", "10.0.0.0/8"]);
  it("is the socket peer when that is not a trusted proxy", () => {
    expect(clientAddress("203.0.113.9", "1.2.3.4", trusted)).toBe("203.0.113.9");
  });
  it("is the nearest untrusted X-Forwarded-For hop behind trusted proxies", () => {
    expect(clientAddress("127.0.0.1", "198.51.100.7", trusted)).toBe("198.51.100.7");
    expect(clientAddress("::ffff:127.0.0.1", "6.6.6.6, 198.51.100.7, 10.1.1.1", trusted)).toBe("198.51.100.7");
    expect(clientAddress("127.0.0.1", undefined, trusted)).toBe("127.0.0.1");
    expect(clientAddress("127.0.0.1", "garbage", trusted)).toBe("127.0.0.1");
  });
});
