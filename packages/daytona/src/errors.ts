import {
  DaytonaAuthenticationError,
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
import { responseHeader, retryAfterMs, vendorErrorMapper } from '@ws/core/backend';

/**
 * The WsError for an error of the Daytona SDK, `(error, what, path?)`: a missing file is `NOT_FOUND`;
 * a sandbox that is gone (deleted, or not started any more) is `BACKEND_UNAVAILABLE` with
 * `details.lost`, never `NOT_FOUND`; a refused or missing key is `PERMISSION_DENIED`; a rate limit, a
 * failing or unreachable service is `BACKEND_UNAVAILABLE`.
 */
export const translateDaytonaError = vendorErrorMapper({
  vendor: 'Daytona',
  classify(error, message, path) {
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
      return {
        kind: 'rate-limited',
        retryAfterMs: retryAfterMs(responseHeader(error.headers, 'retry-after')),
      };
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
