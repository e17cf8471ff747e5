/**
 * A token bucket per key: `capacity` requests at once, refilled evenly over `periodMs` (what the
 * control plane's redis_rate limiter does with rate = burst = the limit).
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly capacity: number,
    private readonly periodMs: number,
  ) {}

  /** Takes one token of `key`: undefined when allowed, else the milliseconds until one is there. */
  take(key: string, now = Date.now()): number | undefined {
    if (this.capacity <= 0) return this.periodMs;
    const perMs = this.capacity / this.periodMs;
    const bucket = this.buckets.get(key) ?? { tokens: this.capacity, at: now };
    bucket.tokens = Math.min(this.capacity, bucket.tokens + (now - bucket.at) * perMs);
    bucket.at = now;
    this.buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return undefined;
    }
    return Math.ceil((1 - bucket.tokens) / perMs);
  }
}
