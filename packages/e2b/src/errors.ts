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

/**
 * The WsError for an error of the e2b SDK, `(error, what, path?)`: a missing file is `NOT_FOUND`; a
 * sandbox that is gone (killed, or expired) is `BACKEND_UNAVAILABLE` with `details.lost`, never
 * `NOT_FOUND`; a refused key is `PERMISSION_DENIED`; a rate limit, a busy, failing or unreachable
 * service is `BACKEND_UNAVAILABLE`.
 */
export const translateE2BError = vendorErrorMapper({
  vendor: 'E2B',
  classify(error, message, path) {
    // envd's proxy answers 502 for a sandbox that no longer exists, which the SDK raises as a
    // TimeoutError ("The sandbox … was not found"): the sandbox is gone, not slow.
    if (error instanceof SandboxNotFoundError || /\bsandbox \S+ was not found\b/i.test(message))
      return { kind: 'gone' };
    if (error instanceof FileNotFoundError || (error instanceof NotFoundError && path !== undefined))
      return { kind: 'missing-file' };
    if (error instanceof AuthenticationError) return { kind: 'credentials' };
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
