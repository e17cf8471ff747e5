import { vendorErrorMapper } from '@ws/core/backend';
import {
  AuthenticationError,
  FileNotFoundError,
  NotFoundError,
  RateLimitError,
  SandboxNotFoundError,
  ServiceBusyError,
  TimeoutError,
} from 'e2b';

/** E2B's answer (429) to one more sandbox than the team may run at once. */
const CONCURRENCY = /maximum number of concurrent E2B sandboxes \((\d+)\)/;

/** The control plane's longest sandbox length, in hours, from its 400 to a longer timeout; else undefined. */
export function maximumTimeoutHours(error: unknown): number | undefined {
  const message = error instanceof Error ? error.message : String(error);
  const match = /Timeout cannot be greater than (\d+(?:\.\d+)?) hours/.exec(message);
  return match ? Number(match[1]) : undefined;
}

/**
 * The WsError for an error of the e2b SDK, `(error, what, path?)`: a missing file is `NOT_FOUND`; a
 * sandbox that is gone (killed, or expired) is `BACKEND_UNAVAILABLE` with `details.lost`, never
 * `NOT_FOUND`; a refused key is `PERMISSION_DENIED`; the team's running sandboxes at their limit, or a
 * request body over the API's size limit, is `LIMIT_EXCEEDED`; a rate limit, a busy, failing or
 * unreachable service is `BACKEND_UNAVAILABLE`.
 */
export const translateE2BError = vendorErrorMapper({
  vendor: 'E2B',
  classify(error, message, path, what) {
    // envd's proxy answers 502 for a sandbox that no longer exists, which the SDK raises as a
    // TimeoutError ("The sandbox … was not found"): the sandbox is gone, not slow.
    if (error instanceof SandboxNotFoundError || /\bsandbox \S+ was not found\b/i.test(message))
      return { kind: 'gone' };
    if (error instanceof FileNotFoundError || (error instanceof NotFoundError && path !== undefined))
      return { kind: 'missing-file' };
    if (error instanceof AuthenticationError) return { kind: 'credentials' };
    // A 429 of its own: it does not pass by waiting a moment, only once another sandbox ends or pauses.
    const concurrency = CONCURRENCY.exec(message);
    if (error instanceof RateLimitError && concurrency)
      return {
        code: 'LIMIT_EXCEEDED',
        message: `E2B refused ${what}: the team runs as many sandboxes as it may (${concurrency[1]}); close or destroy a workspace first (${message})`,
        details: { limit: 'sandboxes', max: Number(concurrency[1]) },
      };
    if (/^413: /.test(message))
      return {
        code: 'LIMIT_EXCEEDED',
        message: `E2B refused ${what}: the request is larger than its API takes (${message})`,
        details: { limit: 'requestBytes' },
      };
    // Refused without being done (the SDK has already waited out `Retry-After` within its time limit).
    if (error instanceof RateLimitError) return { kind: 'rate-limited' };
    if (error instanceof ServiceBusyError) return { kind: 'failing' };
    if (error instanceof TimeoutError) return { kind: 'timeout' };
    // The SDK names the HTTP status first ("500: …"), envd's RPC errors after the code ("2: [unknown]
    // HTTP 500"): a failing service.
    if (/^5\d\d: |\bHTTP 5\d\d\b|\[unavailable\]/.test(message)) return { kind: 'failing' };
    return undefined;
  },
});
