import { describe, expect, it } from "vitest";
import { authorization, isPublicAddress, openCredentials, parseUpstream, sealCredentials, upstreamRefusal } from "./upstream.js";

describe("proxy upstream", () => {
  it("reads a URL with a token or a user and password, and refuses other shapes with the field named", () => {
    expect(parseUpstream({ url: "https://registry.example/npm/" })).toEqual({ url: "https://registry.example/npm/" });
    expect(parseUpstream({ url: "https://r.example/", credentials: { token: "t" } }).credentials).toEqual({ token: "t" });
    expect(parseUpstream({ url: "https://r.example/", credentials: { username: "u", password: "p" } }).credentials).toEqual({ username: "u", password: "p" });
    expect(() => parseUpstream({ url: "not a url" })).toThrow(/upstream.url must be a URL/);
    expect(() => parseUpstream({ url: "https://u:p@r.example/" })).toThrow(/must not carry credentials/);
    expect(() => parseUpstream({ url: "https://r.example/", credentials: { token: "" } })).toThrow(/upstream.credentials/);
    expect(() => parseUpstream(undefined)).toThrow(/upstream must be an object/);
  });

  it("tells public addresses from loopback, private, link-local and unique-local ones", () => {
    for (const ip of ["127.0.0.1", "10.1.2.3", "172.20.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "::1", "fd00::1", "fe80::1", "::ffff:10.0.0.1", "0.0.0.0"]) {
      expect(isPublicAddress(ip), ip).toBe(false);
    }
    for (const ip of ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8"]) expect(isPublicAddress(ip), ip).toBe(true);
  });

  it("refuses http and private upstreams while block-private-import-hosts is on, and allows them when it is off", async () => {
    const resolvesTo = (ip: string) => async () => [ip];
    expect(await upstreamRefusal("http://93.184.216.34/", true)).toMatch(/must be https/);
    expect(await upstreamRefusal("https://127.0.0.1:4873/", true)).toMatch(/not a public address/);
    expect(await upstreamRefusal("https://internal.example/", true, resolvesTo("10.0.0.5"))).toMatch(/not a public address/);
    expect(await upstreamRefusal("https://registry.example/", true, resolvesTo("93.184.216.34"))).toBeUndefined();
    expect(await upstreamRefusal("http://127.0.0.1:4873/", false)).toBeUndefined();
    expect(await upstreamRefusal("ftp://registry.example/", false)).toMatch(/http\(s\)/);
  });

  it("seals credentials so only the same internal secret opens them, and never in clear text", () => {
    const sealed = sealCredentials({ token: "npm_secret_token" }, "internal-secret-1");
    expect(sealed).not.toContain("npm_secret_token");
    expect(Buffer.from(sealed, "base64").toString("utf8")).not.toContain("npm_secret_token");
    expect(openCredentials(sealed, "internal-secret-1")).toEqual({ token: "npm_secret_token" });
    expect(() => openCredentials(sealed, "another-secret")).toThrow();
    expect(sealCredentials({ token: "x" }, "s")).not.toBe(sealCredentials({ token: "x" }, "s"));
    expect(authorization({ username: "u", password: "p" })).toBe(`Basic ${Buffer.from("u:p").toString("base64")}`);
    expect(authorization({ token: "t" })).toBe("Bearer t");
  });
});
