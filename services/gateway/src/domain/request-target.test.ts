import { describe, expect, it } from "vitest";
import { addressedHost, isHost } from "./request-target.js";

const request = (rawHeaders: string[]) => {
  const headers: Record<string, string> = {};
  for (let i = 0; i < rawHeaders.length; i += 2) headers[rawHeaders[i]!.toLowerCase()] ??= rawHeaders[i + 1]!;
  return { headers, rawHeaders };
};

describe("the host a request addresses", () => {
  it("takes one host[:port] as a URL carries it, and nothing else", () => {
    for (const good of ["example.com", "registry.example:8443", "127.0.0.1:9", "[::1]:4873", "[2001:db8::7]", "my_host.internal:80", "x:65535", "Registry.Example"]) expect(isHost(good), good).toBe(true);
    for (const bad of ["", "a b", "exa mple.com:99999", "example.com:99999", "[::1", "::1", "foo@bar", "a/b", "x:80:80", "[zz::1]:80", "host\tname", "x:", "x:-1", ".", "a..", "[::1]x", "x?y", "x#y", `${"a".repeat(254)}`]) {
      expect(isHost(bad), JSON.stringify(bad)).toBe(false);
    }
  });

  it("refuses an invalid Host, two Host headers, and a trusted proxy's invalid X-Forwarded-Host with 400", () => {
    expect(() => addressedHost(request(["Host", "foo@bar"]), false)).toThrow(/Host header is not a valid host/);
    expect(() => addressedHost(request(["Host", "a.example", "host", "b.example"]), false)).toThrow(/more than one Host header/);
    expect(() => addressedHost(request(["Host", "gw:80", "X-Forwarded-Host", "a b"]), true)).toThrow(/X-Forwarded-Host/);
  });

  it("believes X-Forwarded-Host only from a trusted proxy, and lets a request without a Host pass without one", () => {
    expect(addressedHost(request(["Host", "gw:80", "X-Forwarded-Host", "public.example, gw"]), true)).toBe("public.example");
    expect(addressedHost(request(["Host", "gw:80", "X-Forwarded-Host", "a b"]), false)).toBe("gw:80");
    expect(addressedHost(request([]), false)).toBeUndefined();
  });
});
