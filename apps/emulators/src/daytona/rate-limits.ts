import type { ServerResponse } from 'node:http';
import { DaytonaHttpError } from './errors.js';
import type { DaytonaLimits } from './limits.js';

/** The API's throttlers the emulator has: every request, creations, lifecycle changes. */
export type ThrottlerName = 'authenticated' | 'sandbox-create' | 'sandbox-lifecycle';

const LIMIT_OF: Readonly<Record<ThrottlerName, keyof DaytonaLimits>> = {
  authenticated: 'requestsPerWindow',
  'sandbox-create': 'sandboxCreatesPerWindow',
  'sandbox-lifecycle': 'sandboxLifecyclePerWindow',
};

interface Window {
  start: number;
  hits: number;
  /** Once past the limit, refused until then. */
  blockedUntil: number | undefined;
}

/**
 * The API's rate limits, one organization's (the emulator has one): each throttler counts requests in
 * a window of `rateWindowSeconds` from its first; past the limit, requests are refused with 429 for a
 * window's length, `Retry-After-<throttler>` saying how many seconds are left. Every answer carries
 * `X-RateLimit-{Limit,Remaining,Reset}-<throttler>`, as `@nestjs/throttler` writes them.
 */
export class RateLimiter {
  private readonly windows = new Map<ThrottlerName, Window>();

  constructor(private readonly limits: DaytonaLimits) {}

  /** Counts one request against `name`; throws the 429 when it is refused. */
  hit(name: ThrottlerName, response: ServerResponse): void {
    const limit = this.limits[LIMIT_OF[name]];
    const windowMs = this.limits.rateWindowSeconds * 1000;
    const now = Date.now();
    let window = this.windows.get(name);
    const expired =
      window !== undefined &&
      (window.blockedUntil !== undefined ? now >= window.blockedUntil : now >= window.start + windowMs);
    if (!window || expired) {
      window = { start: now, hits: 0, blockedUntil: undefined };
      this.windows.set(name, window);
    }
    window.hits++;
    if (window.hits > limit) window.blockedUntil ??= now + windowMs;
    const resetSeconds = Math.max(0, Math.ceil((window.start + windowMs - now) / 1000));
    response.setHeader(`X-RateLimit-Limit-${name}`, String(limit));
    response.setHeader(`X-RateLimit-Remaining-${name}`, String(Math.max(0, limit - window.hits)));
    response.setHeader(`X-RateLimit-Reset-${name}`, String(resetSeconds));
    if (window.blockedUntil === undefined) return;
    const retryAfter = Math.max(1, Math.ceil((window.blockedUntil - now) / 1000));
    throw new DaytonaHttpError(429, 'ThrottlerException: Too Many Requests', undefined, {
      [`Retry-After-${name}`]: String(retryAfter),
    });
  }
}
