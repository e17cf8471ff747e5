import type { LimitTable } from '../limits.js';

/** The real service's documented limits the emulator enforces (name with its unit → default). */
export const E2B_LIMITS = {
  /**
   * The longest a sandbox may run, from its start (or its resume): a create or connect asking for more
   * is answered 400 "Timeout cannot be greater than N hours", a set-timeout is cut to what is left.
   * 1 h is the base tier's `max_length_hours` (e2b-dev/infra packages/db/migrations/
   * 20240219190940_add_max_length_hours.sql; checked in packages/api/internal/handlers/timeout_helper.go,
   * sandbox_connect.go and packages/api/internal/orchestrator/keep_alive.go); Pro teams have 24 h.
   */
  timeoutMaxMs: 3_600_000,
  /**
   * Running sandboxes per team: one more create (or resume) is answered 429 "you have reached the
   * maximum number of concurrent E2B sandboxes (N)…". 20 is the base tier's `concurrent_instances`
   * (e2b-dev/infra packages/db/migrations/20231220094836_create_triggers_and_policies.sql; enforced in
   * packages/api/internal/orchestrator/create_instance.go) and the Hobby row of
   * https://e2b.dev/docs/sandbox/rate-limits.
   */
  sandboxes: 20,
  /**
   * Control-plane requests per API key in 30 s (a token bucket refilled evenly, as redis_rate's GCRA):
   * beyond it, 429 `{code: 429, message: "Rate limit exceeded"}` with `Retry-After` in whole seconds
   * (at least 1). 20 000 / 30 s is the "Sandbox lifecycle & management API" row of
   * https://e2b.dev/docs/sandbox/rate-limits; the answer is e2b-dev/infra
   * packages/api/internal/middleware/ratelimit/ratelimit.go's.
   */
  apiRequestsPer30s: 20_000,
  /**
   * The largest control-plane request body: beyond it, 413 with the text "request too large" (the
   * gin-contrib/size limiter e2b-dev/infra packages/api/main.go installs with `maxUploadLimit`, 16 MiB).
   */
  apiRequestBytes: 16_777_216,
} as const satisfies LimitTable;

/** The names and values of {@link E2B_LIMITS}. */
export type E2BLimits = typeof E2B_LIMITS;
