/**
 * Reads the Prometheus text exposition format (what GET /metrics serves) into families with
 * their description, so the Metrics page can show each meter with its value and what it means.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
export interface MetricFamily {
  name: string;
  type: string;
  help: string;
  samples: Sample[];
}

const SUFFIXES = ["_bucket", "_sum", "_count", "_created"];

function unescape(text: string): string {
  return text.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
}

function parseLabels(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*/g;
  for (let m = re.exec(text); m; m = re.exec(text)) out[m[1]!] = unescape(m[2]!);
  return out;
}

function parseValue(text: string): number {
  if (text === "+Inf") return Infinity;
  if (text === "-Inf") return -Infinity;
  return Number(text);
}

export function parseExposition(text: string): MetricFamily[] {
  const families = new Map<string, MetricFamily>();
  const family = (name: string): MetricFamily => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { name, type: "untyped", help: "", samples: [] }));
    return f;
  };
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const meta = /^#\s+(HELP|TYPE)\s+(\S+)\s?(.*)$/.exec(line);
    if (meta) {
      const f = family(meta[2]!);
      if (meta[1] === "HELP") f.help = unescape(meta[3] ?? "");
      else f.type = (meta[3] ?? "untyped").trim();
      continue;
    }
    if (line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[^}"]|"(?:[^"\\]|\\.)*")*\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const name = m[1]!;
    let owner = families.get(name);
    if (!owner) {
      const suffix = SUFFIXES.find((s) => name.endsWith(s));
      owner = suffix ? families.get(name.slice(0, -suffix.length)) : undefined;
    }
    (owner ?? family(name)).samples.push({ name, labels: m[2] ? parseLabels(m[2].slice(1, -1)) : {}, value: parseValue(m[3]!) });
  }
  return [...families.values()];
}
