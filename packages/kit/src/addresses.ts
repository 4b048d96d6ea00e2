import { BlockList, isIP } from "node:net";

/**
 * Source-address allowlists and trusted proxies: single IPv4/IPv6 addresses and CIDR blocks.
 * Matching uses node's BlockList; IPv4-mapped IPv6 addresses (::ffff:10.0.0.1) count as
 * their IPv4 form.
 */
export type AddressListResult = { ok: true; entries: string[] } | { ok: false; bad: string; reason: string };

function normalise(ip: string): string {
  const lower = ip.toLowerCase();
  return lower.startsWith("::ffff:") && isIP(lower.slice(7)) === 4 ? lower.slice(7) : lower;
}

export function parseAddressEntry(text: string): { ok: true; entry: string } | { ok: false; reason: string } {
  const t = text.trim();
  // isIP takes `fe80::1%eth0`, but a zone names an interface of one machine, never a client.
  if (t.includes("%")) return { ok: false, reason: "carries a zone (%…): give the address without it" };
  if (/\s/.test(t)) return { ok: false, reason: "holds a space: separate entries with commas" };
  const slash = t.indexOf("/");
  const addr = normalise(slash < 0 ? t : t.slice(0, slash));
  const family = isIP(addr);
  if (family === 0) return { ok: false, reason: "is not an IPv4 or IPv6 address" };
  if (slash < 0) return { ok: true, entry: addr };
  const bitsText = t.slice(slash + 1);
  const bits = Number(bitsText);
  const max = family === 4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(bitsText) || bits > max) return { ok: false, reason: `has a prefix length outside 0-${max}` };
  return { ok: true, entry: `${addr}/${bits}` };
}

/**
 * A comma-separated list (spaces around commas allowed); blank is the empty list. Anything
 * else is refused, never guessed at: `1.2.3.4 5.6.7.8` is one bad entry, and so is an empty
 * one between two commas.
 */
export function parseAddressList(text: string): AddressListResult {
  const entries: string[] = [];
  if (text.trim() === "") return { ok: true, entries };
  for (const raw of text.split(",")) {
    const part = raw.trim();
    if (part === "") return { ok: false, bad: raw, reason: "is empty (two commas in a row, or one at an end)" };
    const r = parseAddressEntry(part);
    if (!r.ok) return { ok: false, bad: part, reason: r.reason };
    if (!entries.includes(r.entry)) entries.push(r.entry);
  }
  return { ok: true, entries };
}

export type AddressMatcher = (ip: string) => boolean;

export function addressMatcher(entries: readonly string[]): AddressMatcher {
  if (entries.length === 0) return () => false;
  const list = new BlockList();
  for (const e of entries) {
    const slash = e.indexOf("/");
    const addr = slash < 0 ? e : e.slice(0, slash);
    const type = isIP(addr) === 4 ? "ipv4" : "ipv6";
    if (slash < 0) list.addAddress(addr, type);
    else list.addSubnet(addr, Number(e.slice(slash + 1)), type);
  }
  return (ip: string) => {
    const a = normalise(ip);
    const family = isIP(a);
    if (family === 0) return false;
    return list.check(a, family === 4 ? "ipv4" : "ipv6");
  };
}

/**
 * The client's address: the socket peer, unless that peer is a trusted proxy, in which case
 * the nearest X-Forwarded-For entry that is not itself a trusted proxy.
 */
export function clientAddress(socketAddress: string | undefined, forwardedFor: string | string[] | undefined, trusted: AddressMatcher): string {
  let current = normalise(socketAddress ?? "");
  if (!trusted(current) || forwardedFor === undefined) return current;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(",") : forwardedFor)
    .split(",")
    .map((h) => h.trim())
    .filter((h) => h !== "");
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = normalise(hops[i]!);
    if (isIP(hop) === 0) return current;
    current = hop;
    if (!trusted(hop)) return hop;
  }
  return current;
}
