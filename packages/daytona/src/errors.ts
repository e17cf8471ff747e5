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
import { isWsError, WsError } from '@ws/core';
import { fileErrorFromMessage, hasTimeoutAbort, isNetworkFailure, retryAfterMs } from '@ws/core/backend';

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The WsError for an error of the Daytona SDK: a missing file is `NOT_FOUND`; a sandbox that is gone
 * (deleted, or not started any more) is `BACKEND_UNAVAILABLE`, never `NOT_FOUND`; a refused or missing
 * key is `PERMISSION_DENIED`; a rate limit or an unreachable service is `BACKEND_UNAVAILABLE`.
 */
export function translateDaytonaError(error: unknown, what: string, path?: string): WsError {
  if (isWsError(error)) return error;
  const message = messageOf(error);
  const details = path !== undefined ? { path } : undefined;
  const notFound = () =>
    new WsError('NOT_FOUND', `${path ?? what}: no such file or directory`, {
      cause: error,
      ...(details ? { details } : {}),
    });
  if (error instanceof DaytonaFileNotFoundError) return notFound();
  if (error instanceof DaytonaNotFoundError && path !== undefined && !/sandbox/i.test(message))
    return notFound();
  if (
    error instanceof DaytonaNotFoundError ||
    error instanceof DaytonaGoneError ||
    /is not started|sandbox .*not found/i.test(message)
  )
    return new WsError('BACKEND_UNAVAILABLE', `The Daytona sandbox is gone (${what}): ${message}`, {
      cause: error,
      details: { lost: true },
    });
  if (
    error instanceof DaytonaAuthenticationError ||
    error instanceof DaytonaForbiddenError ||
    /api key or jwt token is required/i.test(message)
  )
    return new WsError('PERMISSION_DENIED', `Daytona refused the credentials (${what}): ${message}`, {
      cause: error,
    });
  // Refused without being done: safe to send again after the service's `Retry-After`.
  if (error instanceof DaytonaRateLimitError) {
    const after = retryAfterMs(headerOf(error.headers, 'retry-after'));
    return new WsError('BACKEND_UNAVAILABLE', `Daytona is rate-limiting this key (${what}): ${message}`, {
      cause: error,
      details: { refused: true, ...(after !== undefined ? { retryAfterMs: after } : {}) },
    });
  }
  // A request given up after `requestTimeoutMs` (the service did not answer), not a slow operation.
  if (error instanceof DaytonaConnectionTimeoutError)
    return new WsError('BACKEND_UNAVAILABLE', `Daytona did not answer (${what}): ${message}`, {
      cause: error,
      details: { timedOut: true },
    });
  if (error instanceof DaytonaTimeoutError)
    return new WsError('TIMEOUT', `Daytona did not answer in time (${what}): ${message}`, { cause: error });
  const fileError = fileErrorFromMessage(error, message, path ?? what, details);
  if (fileError) return fileError;
  if (
    error instanceof DaytonaConnectionError ||
    error instanceof DaytonaServiceUnavailableError ||
    // A failing service (500, 502, 504), as an unreachable one.
    (error instanceof DaytonaError && (error.statusCode ?? 0) >= 500) ||
    isNetworkFailure(error, message)
  )
    return new WsError('BACKEND_UNAVAILABLE', `Daytona cannot be reached (${what}): ${message}`, {
      cause: error,
      // A request given up after its time limit may have been done: never sent again blindly.
      ...(hasTimeoutAbort(error) ? { details: { timedOut: true } } : {}),
    });
  return new WsError('BACKEND_ERROR', `Daytona ${what} failed: ${message}`, {
    cause: error,
    ...(details ? { details } : {}),
  });
}

/** One header of a vendor error's response (a plain object or axios' headers), by lower-case name. */
function headerOf(headers: unknown, name: string): unknown {
  if (headers === null || typeof headers !== 'object') return undefined;
  const get = (headers as { get?: unknown }).get;
  if (typeof get === 'function') return (get as (key: string) => unknown).call(headers, name);
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value;
  return undefined;
}
