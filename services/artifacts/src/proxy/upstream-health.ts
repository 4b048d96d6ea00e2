/**
 * Whether an upstream is worth asking: after `failuresToMarkDown` failures in a row it is marked
 * down and not asked again until a backoff has passed (doubling per further failure, capped);
 * a success marks it up again. Failures here are timeouts, refused connections, 5xx and 429,
 * never a definite 404.
 */
export class UpstreamHealth {
  private failures = 0;
  private retryAt = 0;

  constructor(
    private readonly now: () => number = Date.now,
    private readonly failuresToMarkDown = 3,
    private readonly baseBackoffMs = 5_000,
    private readonly maxBackoffMs = 5 * 60_000,
  ) {}

  /** True when a request may go to the upstream now (up, or down with its backoff passed). */
  mayAsk(): boolean {
    return this.failures < this.failuresToMarkDown || this.now() >= this.retryAt;
  }

  get down(): boolean {
    return this.failures >= this.failuresToMarkDown;
  }

  succeeded(): void {
    this.failures = 0;
    this.retryAt = 0;
  }

  failed(): void {
    this.failures++;
    if (this.failures >= this.failuresToMarkDown) {
      const doublings = Math.min(this.failures - this.failuresToMarkDown, 20);
      this.retryAt = this.now() + Math.min(this.baseBackoffMs * 2 ** doublings, this.maxBackoffMs);
    }
  }
}

/** The headers of a cached copy served because the upstream failed (RFC 7234's 110 warning and the copy's age). */
export function staleHeaders(cachedAtMs: number, nowMs: number): Record<string, string> {
  return { Warning: '110 - "Response is Stale"', Age: String(Math.max(0, Math.floor((nowMs - cachedAtMs) / 1000))) };
}
