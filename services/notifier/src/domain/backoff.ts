/**
 * The pause before a retry: exponential with "equal jitter". Retry n (1-based) waits between
 * half and all of `base * 2^(n-1)`, capped at `capMs`. Below the cap each pause is at least as
 * long as the longest the previous one could have been, so the pause always grows, while
 * receivers that failed together do not all get their retries in the same instant.
 */
export const DEFAULT_RETRY_BASE_MS = 30_000;
export const RETRY_CAP_MS = 3_600_000;

export function retryDelay(retry: number, baseMs: number, capMs = RETRY_CAP_MS, random: () => number = Math.random): number {
  const n = Math.max(1, Math.floor(retry));
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(n - 1, 52));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
