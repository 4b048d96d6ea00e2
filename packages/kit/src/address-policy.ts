import { isIP } from "node:net";

/**
 * Which addresses a webhook may be sent to. Without `svc.webhook-allow-internal` only public
 * unicast addresses are allowed: a webhook endpoint is a URL an operator typed, and a
 * notifier that would POST to 127.0.0.1, the cloud metadata service or a neighbour on the
 * private network would turn the setting into a way into the inside of the deployment.
 *
 * The check is made on addresses, never on names: the notifier resolves the name itself,
 * refuses if any address it got is not public, and connects only to the addresses it checked.
 * IPv4 written inside IPv6 (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64
 * `64:ff9b::a.b.c.d`, 6to4 `2002:aabb:ccdd::`) is judged by the IPv4 address it carries.
 */
export type AddressRange =
  | "public"
  | "unspecified"
  | "this network"
  | "loopback"
  | "private"
  | "shared address space (CGNAT)"
  | "link-local"
  | "cloud metadata"
  | "unique local"
  | "site-local"
  | "multicast"
  | "broadcast"
  | "documentation"
  | "benchmarking"
  | "reserved"
  | "not an IP address";

export interface AddressVerdict {
  address: string;
  range: AddressRange;
  allowed: boolean;
  /** For an IPv4 address carried in IPv6: how it was carried and the IPv4 address. */
  via?: { form: "IPv4-mapped" | "IPv4-compatible" | "NAT64" | "6to4"; ipv4: string };
}

type V4Rule = [prefix: number, bits: number, range: AddressRange];

const v4 = (a: number, b: number, c: number, d: number) => ((a << 24) | (b << 16) | (c << 8) | d) >>> 0;

/** Order matters: the first match wins, so the narrow blocks come before the wide ones. */
const V4_RULES: V4Rule[] = [
  [v4(0, 0, 0, 0), 32, "unspecified"],
  [v4(0, 0, 0, 0), 8, "this network"],
  [v4(10, 0, 0, 0), 8, "private"],
  [v4(100, 64, 0, 0), 10, "shared address space (CGNAT)"],
  [v4(127, 0, 0, 0), 8, "loopback"],
  [v4(169, 254, 169, 254), 32, "cloud metadata"],
  [v4(169, 254, 0, 0), 16, "link-local"],
  [v4(172, 16, 0, 0), 12, "private"],
  // 192.0.0.0/24 holds protocol assignments and some providers' metadata (192.0.0.192).
  [v4(192, 0, 0, 0), 24, "reserved"],
  [v4(192, 0, 2, 0), 24, "documentation"],
  [v4(192, 88, 99, 0), 24, "reserved"],
  [v4(192, 168, 0, 0), 16, "private"],
  [v4(198, 18, 0, 0), 15, "benchmarking"],
  [v4(198, 51, 100, 0), 24, "documentation"],
  [v4(203, 0, 113, 0), 24, "documentation"],
  [v4(224, 0, 0, 0), 4, "multicast"],
  [v4(255, 255, 255, 255), 32, "broadcast"],
  [v4(240, 0, 0, 0), 4, "reserved"],
];

function classifyV4(n: number): AddressRange {
  for (const [prefix, bits, range] of V4_RULES) {
    const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
    if ((n & mask) >>> 0 === prefix) return range;
  }
  return "public";
}

function parseV4(text: string): number | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return undefined;
    n = n * 256 + Number(p);
  }
  return n;
}

const v4Text = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");

/** Sixteen bytes of an IPv6 address (zone index dropped), or undefined. */
export function parseV6(text: string): Uint8Array | undefined {
  let t = text;
  const zone = t.indexOf("%");
  if (zone >= 0) t = t.slice(0, zone);
  if (isIP(t) !== 6) return undefined;
  let tail: number[] = [];
  const lastColon = t.lastIndexOf(":");
  const last = t.slice(lastColon + 1);
  if (last.includes(".")) {
    // A trailing dotted quad is the last two groups.
    const n = parseV4(last);
    if (n === undefined) return undefined;
    tail = [n >>> 16, n & 0xffff];
    t = t.slice(0, lastColon + 1);
    if (!t.endsWith("::")) t = t.slice(0, -1);
  }
  const [head, rest] = t.includes("::") ? (t.split("::") as [string, string]) : [t, undefined];
  const groups = (s: string) => (s === "" ? [] : s.split(":").map((g) => parseInt(g, 16)));
  const h = groups(head);
  const r = rest === undefined ? [] : groups(rest);
  const missing = 8 - tail.length - h.length - r.length;
  if (missing < 0 || (rest === undefined && missing !== 0)) return undefined;
  const all = [...h, ...new Array<number>(rest === undefined ? 0 : missing).fill(0), ...r, ...tail];
  if (all.length !== 8 || all.some((g) => !Number.isInteger(g) || g < 0 || g > 0xffff)) return undefined;
  const out = new Uint8Array(16);
  all.forEach((g, i) => {
    out[2 * i] = g >> 8;
    out[2 * i + 1] = g & 255;
  });
  return out;
}

/** The instance metadata service on AWS Nitro, inside the unique local block. */
const AWS_METADATA_V6 = parseV6("fd00:ec2::254")!;

const startsWith = (b: Uint8Array, prefix: number[], bits: number): boolean => {
  for (let i = 0; i < bits; i++) {
    const byte = Math.floor(i / 8);
    const mask = 0x80 >> i % 8;
    if (((b[byte] ?? 0) & mask) !== ((prefix[byte] ?? 0) & mask)) return false;
  }
  return true;
};

const zeros = (b: Uint8Array, from: number, to: number) => b.slice(from, to).every((x) => x === 0);
const v4At = (b: Uint8Array, at: number) => (((b[at] ?? 0) << 24) | ((b[at + 1] ?? 0) << 16) | ((b[at + 2] ?? 0) << 8) | (b[at + 3] ?? 0)) >>> 0;

function classifyV6(b: Uint8Array, address: string): AddressVerdict {
  const verdict = (range: AddressRange, via?: AddressVerdict["via"]): AddressVerdict => ({ address, range, allowed: range === "public", ...(via ? { via } : {}) });
  const carried = (form: NonNullable<AddressVerdict["via"]>["form"], n: number) => verdict(classifyV4(n), { form, ipv4: v4Text(n) });

  if (zeros(b, 0, 16)) return verdict("unspecified");
  if (zeros(b, 0, 15) && b[15] === 1) return verdict("loopback");
  // ::ffff:0:0/96
  if (zeros(b, 0, 10) && b[10] === 0xff && b[11] === 0xff) return carried("IPv4-mapped", v4At(b, 12));
  // ::/96, deprecated IPv4-compatible
  if (zeros(b, 0, 12)) return carried("IPv4-compatible", v4At(b, 12));
  // 64:ff9b::/96 well-known NAT64 prefix: the gateway would connect to the IPv4 address.
  if (startsWith(b, [0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0], 96)) return carried("NAT64", v4At(b, 12));
  // 2002::/16 6to4: the IPv4 address of the relay is in bits 16-47.
  if (startsWith(b, [0x20, 0x02], 16)) return carried("6to4", v4At(b, 2));
  if (startsWith(b, [0xff], 8)) return verdict("multicast");
  if (startsWith(b, [0xfe, 0x80], 10)) return verdict("link-local");
  if (startsWith(b, [0xfe, 0xc0], 10)) return verdict("site-local");
  if (startsWith(b, [0xfc], 7)) {
    return verdict(b.every((x, i) => x === AWS_METADATA_V6[i]) ? "cloud metadata" : "unique local");
  }
  if (startsWith(b, [0x20, 0x01, 0x0d, 0xb8], 32)) return verdict("documentation");
  if (startsWith(b, [0x3f, 0xff], 20)) return verdict("documentation");
  // 2001::/23: Teredo, ORCHID, benchmarking and other protocol assignments; not receivers.
  if (startsWith(b, [0x20, 0x01, 0x00], 23)) return verdict("reserved");
  // Only 2000::/3 is global unicast; everything else (64:ff9b:1::/48, 100::/64, ...) is not.
  if (!startsWith(b, [0x20], 3)) return verdict("reserved");
  return verdict("public");
}

/** Classifies one IP address (IPv4 dotted quad or IPv6, brackets allowed). */
export function classifyAddress(text: string): AddressVerdict {
  const address = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  const n = parseV4(address);
  if (n !== undefined) {
    const range = classifyV4(n);
    return { address, range, allowed: range === "public" };
  }
  const b = parseV6(address);
  if (!b) return { address, range: "not an IP address", allowed: false };
  return classifyV6(b, address);
}

/** "in the loopback range", "in the cloud metadata range (IPv4-mapped 169.254.169.254)", "public". */
export function rangeText(v: AddressVerdict): string {
  if (v.range === "public") return "public";
  if (v.range === "not an IP address") return "not an IP address";
  return `in the ${v.range} range${v.via ? ` (${v.via.form} ${v.via.ipv4})` : ""}`;
}

/** "127.0.0.1 is in the loopback range". */
export function describeVerdict(v: AddressVerdict): string {
  return `${v.address} is ${rangeText(v)}`;
}
