/** How a command prints: a readable table (the default) or JSON (`--json`), on streams it is given. */
export interface Output {
  json: boolean;
  /** Standard output: the answer. */
  out(text: string): void;
  /** Standard error: notes for the person at the terminal, never needed by a script. */
  note(text: string): void;
}

export interface Column<T> {
  header: string;
  cell: (row: T) => string;
}

/** Columns padded to their widest cell, two spaces apart; the last column is not padded. */
export function renderTable<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  const cells = rows.map((r) => columns.map((c) => oneLine(c.cell(r))));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((row) => row[i]!.length)));
  const line = (row: string[]) =>
    row
      .map((v, i) => (i === row.length - 1 ? v : v.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...cells.map(line)].join("\n");
}

/** `name  value` lines for one object. */
export function renderFields(fields: readonly [string, string][]): string {
  const width = Math.max(...fields.map(([k]) => k.length));
  return fields.map(([k, v]) => `${k.padEnd(width)}  ${oneLine(v)}`).join("\n");
}

/** Prints `value` as JSON, or `render(value)` as text. */
export function emit<T>(o: Output, value: T, render: (v: T) => string): void {
  o.out(o.json ? JSON.stringify(value, null, 2) : render(value));
}

const oneLine = (s: string) => s.replace(/[\r\n\t]+/g, " ");

/** `2025-03-01 12:30Z (in 3d)`: the instant to the minute, and how far it is from now. */
export function when(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return "-";
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  return `${new Date(t).toISOString().slice(0, 16).replace("T", " ")}Z (${relative(t - now)})`;
}

export function relative(ms: number): string {
  const abs = Math.abs(ms);
  const span = abs < 60_000 ? `${Math.round(abs / 1000)}s` : abs < 3_600_000 ? `${Math.round(abs / 60_000)}m` : abs < 172_800_000 ? `${Math.round(abs / 3_600_000)}h` : `${Math.round(abs / 86_400_000)}d`;
  return ms >= 0 ? `in ${span}` : `${span} ago`;
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}
