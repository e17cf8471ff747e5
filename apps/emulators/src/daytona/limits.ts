import type { LimitTable } from '../limits.js';

/**
 * The real service's limits the emulator enforces (name with its unit → default), those of a new
 * organization (Tier 1). Sources, in github.com/daytonaio/daytona (v0.190.0, the last open release):
 * the per-sandbox and total quotas are `defaultOrganizationQuota` of `apps/api/src/config/configuration.ts`
 * (checked by `validateOrganizationQuotas` in `apps/api/src/sandbox/services/sandbox.service.ts` on create
 * and start, answered 400); the rate limits are the Tier 1 row of the docs' limits page
 * (`apps/docs/src/content/docs/en/limits.mdx`, https://www.daytona.io/docs/en/limits), enforced per
 * organization by `AuthenticatedRateLimitGuard` (`apps/api/src/common/guards/`) over `@nestjs/throttler`,
 * answered 429 with `Retry-After-<throttler>`; the window is the throttlers' `ttl` (per minute in the docs).
 * The toolbox sets no upload size and no command time limit (`apps/daemon/pkg/toolbox/fs/upload_files.go`,
 * `apps/daemon/pkg/toolbox/process/execute.go`), so there is none here.
 */
export const DAYTONA_LIMITS = {
  /** vCPUs one sandbox may ask for (`maxCpuPerSandbox`). */
  cpuPerSandbox: 4,
  /** GiB of memory one sandbox may ask for (`maxMemoryPerSandbox`). */
  memoryPerSandboxGiB: 8,
  /** GiB of disk one sandbox may ask for (`maxDiskPerSandbox`). */
  diskPerSandboxGiB: 10,
  /** vCPUs of all running sandboxes together (`totalCpuQuota`). */
  totalCpu: 10,
  /** GiB of memory of all running sandboxes together (`totalMemoryQuota`). */
  totalMemoryGiB: 10,
  /** GiB of disk of all running and stopped sandboxes together (`totalDiskQuota`; archived ones free it). */
  totalDiskGiB: 30,
  /** API requests per window (the `authenticated` throttler: every control-plane request). */
  requestsPerWindow: 10_000,
  /** Sandbox creations per window (the `sandbox-create` throttler). */
  sandboxCreatesPerWindow: 300,
  /** Starts, stops, archives, recoveries and deletions per window (the `sandbox-lifecycle` throttler). */
  sandboxLifecyclePerWindow: 10_000,
  /** The rate limits' window, in seconds (the throttlers' `ttl`, also how long a refusal lasts). */
  rateWindowSeconds: 60,
  /** The longest auto-archive interval in minutes (`maxAutoArchiveInterval`; 0 asks for it). */
  autoArchiveMaxMinutes: 43_200,
} as const satisfies LimitTable;

/** The names of {@link DAYTONA_LIMITS}, each a number. */
export type DaytonaLimits = { readonly [Name in keyof typeof DAYTONA_LIMITS]: number };
