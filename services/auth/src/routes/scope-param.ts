/**
 * The scope at the end of a grant-removal path: one percent-encoded segment
 * (`libs%3Acom%2Facme`) or the same scope with literal slashes (`libs:com/acme`).
 */
export function scopeFromPath(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw; // not valid percent-encoding: the scope parser refuses it by name
  }
}
