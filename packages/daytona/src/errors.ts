import {
  DaytonaAuthenticationError,
  DaytonaBadRequestError,
  DaytonaConflictError,
  DaytonaConnectionError,
  DaytonaConnectionTimeoutError,
  DaytonaError,
  DaytonaFileNotFoundError,
  DaytonaForbiddenError,
  DaytonaGoneError,
  DaytonaNotFoundError,
  DaytonaRateLimitError,
  DaytonaServiceUnavailableError,
  DaytonaTimeoutError,
} from '@daytonaio/sdk';
import { retryAfterMs, type VendorErrorClass, vendorErrorMapper } from '@ws/core/backend';

/**
 * The wait a 429 asks for, in ms: the API's throttlers name their header after themselves
 * (`Retry-After-sandbox-create`, `Retry-After-authenticated`, …), a proxy may send a plain
 * `Retry-After`; the longest wins. Undefined when none is readable.
 */
export function rateLimitWaitMs(headers: unknown): number | undefined {
  if (headers === null || typeof headers !== 'object') return undefined;
  // Axios' headers are an object of their own; `toJSON` gives them as a plain one.
  const toJSON = (headers as { toJSON?: unknown }).toJSON;
  const plain = typeof toJSON === 'function' ? (toJSON as () => unknown).call(headers) : headers;
  let longest: number | undefined;
  for (const [name, value] of Object.entries(plain as Record<string, unknown>)) {
    if (!/^retry-after(-[a-z0-9-]+)?$/i.test(name)) continue;
    const wait = retryAfterMs(Array.isArray(value) ? value[0] : value);
    if (wait !== undefined && (longest === undefined || wait > longest)) longest = wait;
  }
  return longest;
}

/**
 * Whether the API refused a lifecycle change for the sandbox's state: 409 while another change is in
 * progress, 400 for a sandbox not in a state the change starts from (`Sandbox is not in a stoppable
 * state`, `Sandbox is not stopped`). Nothing was done.
 */
export function isStateRefusal(error: unknown): boolean {
  if (error instanceof DaytonaConflictError) return true;
  return (
    error instanceof DaytonaBadRequestError &&
    /not in a stoppable state|is not stopped|not in valid state|state change in progress/i.test(error.message)
  );
}

const QUOTA_PATTERNS: readonly [RegExp, 'per-sandbox' | 'total'][] = [
  [
    /^(CPU|Memory|Disk) request [\d.]+(?:GB)? exceeds maximum allowed per (?:non-ephemeral )?sandbox \(([\d.]+)/i,
    'per-sandbox',
  ],
  [/^Total (CPU|memory|disk|GPU) limit exceeded\. Maximum allowed: ([\d.]+)/i, 'total'],
];

/**
 * A create or start the organization's quotas refused (400 `CPU request 8 exceeds maximum allowed per
 * sandbox (4)`, `Total CPU limit exceeded. Maximum allowed: 10.`): `LIMIT_EXCEEDED`, with which
 * resource, which kind of quota and its size in `details`. Undefined for any other error.
 */
function quotaExceeded(error: unknown, message: string, what: string): VendorErrorClass | undefined {
  if (!(error instanceof DaytonaBadRequestError)) return undefined;
  for (const [pattern, quota] of QUOTA_PATTERNS) {
    const match = pattern.exec(message);
    if (!match) continue;
    const resource = match[1]!.toLowerCase();
    const first = message.split('\n')[0] ?? message;
    return {
      code: 'LIMIT_EXCEEDED',
      message: `Daytona refused ${what}: ${first} (the organization's ${quota} ${resource} quota)`,
      details: { quota, resource, limit: Number(match[2]) },
    };
  }
  return undefined;
}

/**
 * The WsError for an error of the Daytona SDK, `(error, what, path?)`: a missing file is `NOT_FOUND`;
 * a sandbox that is gone (deleted, or not started any more) is `BACKEND_UNAVAILABLE` with
 * `details.lost`, never `NOT_FOUND`; a refused or missing key is `PERMISSION_DENIED`; a quota of the
 * organization (per sandbox or in total) is `LIMIT_EXCEEDED`; a rate limit (with its `Retry-After-*`
 * wait), a failing or unreachable service is `BACKEND_UNAVAILABLE`.
 */
export const translateDaytonaError = vendorErrorMapper({
  vendor: 'Daytona',
  classify(error, message, path, what) {
    const quota = quotaExceeded(error, message, what);
    if (quota) return quota;
    if (error instanceof DaytonaFileNotFoundError) return { kind: 'missing-file' };
    if (error instanceof DaytonaNotFoundError && path !== undefined && !/sandbox/i.test(message))
      return { kind: 'missing-file' };
    if (
      error instanceof DaytonaNotFoundError ||
      error instanceof DaytonaGoneError ||
      /is not started|sandbox .*not found/i.test(message)
    )
      return { kind: 'gone' };
    if (
      error instanceof DaytonaAuthenticationError ||
      error instanceof DaytonaForbiddenError ||
      /api key or jwt token is required/i.test(message)
    )
      return { kind: 'credentials' };
    // Refused without being done: safe to send again after the service's `Retry-After`.
    if (error instanceof DaytonaRateLimitError)
      return { kind: 'rate-limited', retryAfterMs: rateLimitWaitMs(error.headers) };
    // A request given up after `requestTimeoutMs` (the service did not answer), not a slow operation.
    if (error instanceof DaytonaConnectionTimeoutError) return { kind: 'no-answer' };
    if (error instanceof DaytonaTimeoutError) return { kind: 'timeout' };
    // A failing service (500, 502, 504).
    if (
      error instanceof DaytonaServiceUnavailableError ||
      (error instanceof DaytonaError && (error.statusCode ?? 0) >= 500)
    )
      return { kind: 'failing' };
    if (error instanceof DaytonaConnectionError) return { kind: 'unreachable' };
    return undefined;
  },
});
