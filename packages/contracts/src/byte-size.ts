/**
 * Sizes as people read and type them: a storage quota in a refusal, on the console and in the
 * CLI, which bundles nothing else (binary units when read out: 1.5 GiB; both kinds when typed: 500 MiB, 2 GB).
 */

/** Bytes as people read them: "1.5 GiB", "300 bytes". */
export function bytesText(n: number): string {
  const units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${n} bytes` : `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}

const UNITS: Record<string, number> = { "": 1, b: 1, k: 1024, kb: 1000, kib: 1024, m: 1024 ** 2, mb: 1000 ** 2, mib: 1024 ** 2, g: 1024 ** 3, gb: 1000 ** 3, gib: 1024 ** 3, t: 1024 ** 4, tb: 1000 ** 4, tib: 1024 ** 4 };

/** A positive size as typed ("500 MiB", "10GB", "1048576") in whole bytes; undefined: not one. */
export function parseByteSize(typed: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(typed.trim());
  const unit = m ? UNITS[m[2]!.toLowerCase()] : undefined;
  if (!m || unit === undefined) return undefined;
  const bytes = Math.round(Number(m[1]) * unit);
  return Number.isSafeInteger(bytes) && bytes > 0 ? bytes : undefined;
}
