/**
 * The known name a misspelt one most likely meant, for "did you mean …?" in a refusal: the
 * nearest by edit distance (insertions, deletions, substitutions and swaps of two neighbours),
 * when it is near enough to be a slip of the keyboard rather than another word (at most a third
 * of the name's length, and no more than 4 edits). Case is ignored.
 */
export function closestName(name: string, known: Iterable<string>): string | undefined {
  const wanted = name.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const d = editDistance(wanted, candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  const limit = Math.min(4, Math.max(1, Math.floor(wanted.length / 3)));
  return bestDistance > 0 && bestDistance <= limit ? best : undefined;
}

/** Optimal string alignment distance (Damerau-Levenshtein without repeated edits of a substring). */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        row.push(j);
        continue;
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, row[j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      row.push(d);
    }
    rows.push(row);
  }
  return rows[a.length]![b.length]!;
}
