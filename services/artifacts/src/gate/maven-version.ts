/**
 * Maven's version order (maven-artifact's ComparableVersion): items split at `.`, `-` and
 * digit/letter changes, trailing "null" items (0, "", ga, final, release) dropped, and the
 * qualifiers ordered alpha < beta < milestone < rc < snapshot < (release) < sp < anything else
 * (alphabetically). `1.0` = `1` = `1.0.0` = `1-ga`; `1.0-alpha-1` < `1.0`; `1.0.1` > `1.0-sp`.
 */
type Item = { kind: "int"; value: bigint } | { kind: "str"; value: string } | { kind: "list"; items: Item[] };

const QUALIFIERS = ["alpha", "beta", "milestone", "rc", "snapshot", "", "sp"];
const ALIASES: Record<string, string> = { ga: "", final: "", release: "", cr: "rc" };
const RELEASE = String(QUALIFIERS.indexOf(""));

const comparable = (q: string): string => {
  const i = QUALIFIERS.indexOf(q);
  return i === -1 ? `${QUALIFIERS.length}-${q}` : String(i);
};

const str = (value: string, followedByDigit: boolean): Item => {
  let v = value;
  if (followedByDigit && v.length === 1) v = v === "a" ? "alpha" : v === "b" ? "beta" : v === "m" ? "milestone" : v;
  return { kind: "str", value: ALIASES[v] ?? v };
};
const parsed = (digits: boolean, text: string): Item => (digits ? { kind: "int", value: BigInt(text) } : str(text, false));

const isNull = (i: Item): boolean => (i.kind === "int" ? i.value === 0n : i.kind === "str" ? comparable(i.value) === RELEASE : i.items.length === 0);

function normalize(list: Item[]): void {
  for (let i = list.length - 1; i >= 0; i--) {
    const last = list[i]!;
    if (isNull(last)) list.splice(i, 1);
    else if (last.kind !== "list") break;
  }
}

export function parseMavenVersion(version: string): Item {
  const text = version.toLowerCase();
  const main: Item[] = [];
  let list = main;
  const stack: Item[][] = [main];
  const sub = () => {
    const next: Item[] = [];
    list.push({ kind: "list", items: next });
    list = next;
    stack.push(next);
  };
  let digits = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "." || c === "-") {
      list.push(i === start ? { kind: "int", value: 0n } : parsed(digits, text.slice(start, i)));
      start = i + 1;
      if (c === "-") sub();
    } else if (c >= "0" && c <= "9") {
      if (!digits && i > start) {
        list.push(str(text.slice(start, i), true));
        start = i;
        sub();
      }
      digits = true;
    } else {
      if (digits && i > start) {
        list.push(parsed(true, text.slice(start, i)));
        start = i;
        sub();
      }
      digits = false;
    }
  }
  if (text.length > start) list.push(parsed(digits, text.slice(start)));
  while (stack.length > 0) normalize(stack.pop()!);
  return { kind: "list", items: main };
}

const sign = (n: number): number => (n < 0 ? -1 : n > 0 ? 1 : 0);

function compareItems(a: Item, b: Item | undefined): number {
  if (a.kind === "int") {
    if (b === undefined) return a.value === 0n ? 0 : 1;
    if (b.kind === "int") return a.value < b.value ? -1 : a.value > b.value ? 1 : 0;
    return 1;
  }
  if (a.kind === "str") {
    if (b === undefined) return sign(comparable(a.value).localeCompare(RELEASE, "en"));
    if (b.kind === "str") {
      const x = comparable(a.value);
      const y = comparable(b.value);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    return -1;
  }
  if (b === undefined) return a.items.length === 0 ? 0 : compareItems(a.items[0]!, undefined);
  if (b.kind === "int") return -1;
  if (b.kind === "str") return 1;
  for (let i = 0; i < Math.max(a.items.length, b.items.length); i++) {
    const l = a.items[i];
    const r = b.items[i];
    const c = l === undefined ? (r === undefined ? 0 : -compareItems(r, undefined)) : compareItems(l, r);
    if (c !== 0) return c;
  }
  return 0;
}

export function compareMavenVersions(a: string, b: string): number {
  return compareItems(parseMavenVersion(a), parseMavenVersion(b));
}

interface Bound {
  version: string;
  inclusive: boolean;
}
interface Interval {
  lower?: Bound;
  upper?: Bound;
}

/**
 * A Maven version range: `[1.0,2.0)`, `(,1.0]`, `[1.5]` (exactly), several joined by commas
 * (`(,1.0],[1.2,)`), or a bare version (exactly that version, as a deny list means it).
 * Undefined when it is not one.
 */
export function parseMavenRange(range: string): Interval[] | undefined {
  const text = range.replace(/\s+/g, "");
  if (text === "") return undefined;
  if (!/^[[(]/.test(text)) return /^[^,[\]()]+$/.test(text) ? [{ lower: { version: text, inclusive: true }, upper: { version: text, inclusive: true } }] : undefined;
  const out: Interval[] = [];
  const re = /([[(])([^,[\]()]*)(?:,([^,[\]()]*))?([\])])(?:,|$)/y;
  let at = 0;
  while (at < text.length) {
    re.lastIndex = at;
    const m = re.exec(text);
    if (!m) return undefined;
    at = re.lastIndex;
    const [, open, low = "", high, close] = m;
    if (high === undefined) {
      // [1.0] is exactly 1.0; (1.0) means nothing.
      if (open !== "[" || close !== "]" || low === "") return undefined;
      out.push({ lower: { version: low, inclusive: true }, upper: { version: low, inclusive: true } });
      continue;
    }
    const interval: Interval = {};
    if (low !== "") interval.lower = { version: low, inclusive: open === "[" };
    if (high !== "") interval.upper = { version: high, inclusive: close === "]" };
    if (interval.lower && interval.upper && compareMavenVersions(interval.lower.version, interval.upper.version) > 0) return undefined;
    out.push(interval);
  }
  if (text.endsWith(",")) return undefined;
  return out;
}

export function inMavenRange(version: string, intervals: readonly Interval[]): boolean {
  return intervals.some(({ lower, upper }) => {
    if (lower) {
      const c = compareMavenVersions(version, lower.version);
      if (c < 0 || (c === 0 && !lower.inclusive)) return false;
    }
    if (upper) {
      const c = compareMavenVersions(version, upper.version);
      if (c > 0 || (c === 0 && !upper.inclusive)) return false;
    }
    return true;
  });
}
