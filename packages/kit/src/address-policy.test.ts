import { describe, expect, it } from "vitest";
import { classifyAddress, describeVerdict, parseV6 } from "./address-policy.js";

const rangeOf = (ip: string) => classifyAddress(ip).range;

describe("IPv4 addresses", () => {
  it.each([
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "this network"],
    ["10.0.0.0", "private"],
    ["10.255.255.255", "private"],
    ["100.64.0.0", "shared address space (CGNAT)"],
    ["100.127.255.255", "shared address space (CGNAT)"],
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["169.254.0.1", "link-local"],
    ["169.254.169.254", "cloud metadata"],
    ["169.254.255.255", "link-local"],
    ["172.16.0.0", "private"],
    ["172.31.255.255", "private"],
    ["192.0.0.192", "reserved"],
    ["192.0.2.1", "documentation"],
    ["192.88.99.1", "reserved"],
    ["192.168.0.1", "private"],
    ["192.168.255.255", "private"],
    ["198.18.0.1", "benchmarking"],
    ["198.19.255.255", "benchmarking"],
    ["198.51.100.7", "documentation"],
    ["203.0.113.9", "documentation"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["240.0.0.1", "reserved"],
    ["255.255.255.254", "reserved"],
    ["255.255.255.255", "broadcast"],
  ])("%s is %s and refused", (ip, range) => {
    const v = classifyAddress(ip);
    expect(v.range).toBe(range);
    expect(v.allowed).toBe(false);
  });

  it.each(["1.1.1.1", "8.8.8.8", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0", "126.255.255.255", "128.0.0.0", "169.253.255.255", "169.255.0.0", "172.15.255.255", "172.32.0.0", "192.167.255.255", "192.169.0.0", "198.17.255.255", "198.20.0.0", "223.255.255.255"])(
    "%s (just outside a forbidden block) is public",
    (ip) => {
      expect(classifyAddress(ip)).toEqual({ address: ip, range: "public", allowed: true });
    },
  );
});

describe("IPv6 addresses", () => {
  it.each([
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["0:0:0:0:0:0:0:1", "loopback"],
    ["fc00::1", "unique local"],
    ["fdff:ffff::1", "unique local"],
    ["fd00:ec2::254", "cloud metadata"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["febf:ffff::1", "link-local"],
    ["fec0::1", "site-local"],
    ["ff02::1", "multicast"],
    ["ff0e::101", "multicast"],
    ["2001:db8::1", "documentation"],
    ["3fff::1", "documentation"],
    ["2001::1", "reserved"],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "reserved"],
    ["100::1", "reserved"],
    ["64:ff9b:1::1", "reserved"],
    ["4000::1", "reserved"],
  ])("%s is %s and refused", (ip, range) => {
    const v = classifyAddress(ip);
    expect(v.range).toBe(range);
    expect(v.allowed).toBe(false);
  });

  it.each(["2606:4700:4700::1111", "2001:4860:4860::8888", "2a00:1450:4001:82a::200e", "[2606:4700:4700::1111]"])("%s is public", (ip) => {
    expect(classifyAddress(ip).allowed).toBe(true);
  });

  it("judges IPv4 carried inside IPv6 by the IPv4 address, in every written form", () => {
    const cases: [string, string, string, string][] = [
      ["::ffff:127.0.0.1", "loopback", "IPv4-mapped", "127.0.0.1"],
      ["::ffff:7f00:1", "loopback", "IPv4-mapped", "127.0.0.1"],
      ["::ffff:10.1.2.3", "private", "IPv4-mapped", "10.1.2.3"],
      ["::ffff:ac10:1", "private", "IPv4-mapped", "172.16.0.1"],
      ["::ffff:c0a8:101", "private", "IPv4-mapped", "192.168.1.1"],
      ["::ffff:169.254.169.254", "cloud metadata", "IPv4-mapped", "169.254.169.254"],
      ["::ffff:a9fe:a9fe", "cloud metadata", "IPv4-mapped", "169.254.169.254"],
      ["::ffff:a9fe:1", "link-local", "IPv4-mapped", "169.254.0.1"],
      ["::ffff:0.0.0.0", "unspecified", "IPv4-mapped", "0.0.0.0"],
      ["::ffff:6440:1", "shared address space (CGNAT)", "IPv4-mapped", "100.64.0.1"],
      ["::ffff:e000:1", "multicast", "IPv4-mapped", "224.0.0.1"],
      ["::ffff:ffff:ffff", "broadcast", "IPv4-mapped", "255.255.255.255"],
      ["0:0:0:0:0:ffff:7f00:1", "loopback", "IPv4-mapped", "127.0.0.1"],
      ["::127.0.0.1", "loopback", "IPv4-compatible", "127.0.0.1"],
      ["::a00:1", "private", "IPv4-compatible", "10.0.0.1"],
      ["64:ff9b::127.0.0.1", "loopback", "NAT64", "127.0.0.1"],
      ["64:ff9b::a9fe:a9fe", "cloud metadata", "NAT64", "169.254.169.254"],
      ["2002:7f00:1::", "loopback", "6to4", "127.0.0.1"],
      ["2002:c0a8:101::1", "private", "6to4", "192.168.1.1"],
    ];
    for (const [ip, range, form, ipv4] of cases) {
      const v = classifyAddress(ip);
      expect({ ip, range: v.range, allowed: v.allowed, via: v.via }).toEqual({ ip, range, allowed: false, via: { form, ipv4 } });
    }
  });

  it("lets through IPv4-mapped and NAT64 forms of public addresses", () => {
    expect(classifyAddress("::ffff:8.8.8.8").allowed).toBe(true);
    expect(classifyAddress("::ffff:808:808").allowed).toBe(true);
    expect(classifyAddress("64:ff9b::1.1.1.1").allowed).toBe(true);
  });

  it("reads every way of writing an IPv6 address to the same bytes", () => {
    const hex = (ip: string) => Buffer.from(parseV6(ip)!).toString("hex");
    expect(hex("::1")).toBe("00000000000000000000000000000001");
    expect(hex("1::")).toBe("00010000000000000000000000000000");
    expect(hex("1:2:3:4:5:6:7:8")).toBe("00010002000300040005000600070008");
    expect(hex("::ffff:1.2.3.4")).toBe("00000000000000000000ffff01020304");
    expect(hex("1:2:3:4:5:6:1.2.3.4")).toBe("00010002000300040005000601020304");
    expect(hex("1::1.2.3.4")).toBe("00010000000000000000000001020304");
    expect(hex("FE80::ABCD%25eth0")).toBe("fe80000000000000000000000000abcd");
    expect(parseV6("1:2:3")).toBeUndefined();
    expect(parseV6("::ffff:1.2.3.256")).toBeUndefined();
  });
});

describe("anything else", () => {
  it("refuses what is not an IP address", () => {
    expect(rangeOf("example.com")).toBe("not an IP address");
    expect(rangeOf("")).toBe("not an IP address");
    expect(rangeOf("1.2.3")).toBe("not an IP address");
  });

  it("describes a refusal in words an operator can act on", () => {
    expect(describeVerdict(classifyAddress("127.0.0.1"))).toBe("127.0.0.1 is in the loopback range");
    expect(describeVerdict(classifyAddress("::ffff:a9fe:a9fe"))).toBe("::ffff:a9fe:a9fe is in the cloud metadata range (IPv4-mapped 169.254.169.254)");
  });
});
