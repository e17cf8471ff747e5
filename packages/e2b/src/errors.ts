import { isWsError, WsError } from '@ws/core';
import { fileErrorFromMessage, hasTimeoutAbort, isNetworkFailure } from '@ws/core/backend';
import {
  AuthenticationError,
  FileNotFoundError,
  NotFoundError,
  RateLimitError,
  SandboxNotFoundError,
  ServiceBusyError,
  TimeoutError,
} from 'e2b';

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The WsError for an error of the e2b SDK: a missing file is `NOT_FOUND`; a sandbox that is gone
 * (killed, or expired) is `BACKEND_UNAVAILABLE`, never `NOT_FOUND`; a refused key is
 * `PERMISSION_DENIED`; a rate limit or an unreachable service is `BACKEND_UNAVAILABLE`.
 */
export function translateE2BError(error: unknown, what: string, path?: string): WsError {
  if (isWsError(error)) return error;
  const message = messageOf(error);
  const details = path !== undefined ? { path } : undefined;
  // envd's proxy answers 502 for a sandbox that no longer exists, which the SDK raises as a
  // TimeoutError ("The sandbox … was not found"): the sandbox is gone, not slow.
  if (error instanceof SandboxNotFoundError || /\bsandbox \S+ was not found\b/i.test(message))
    return new WsError('BACKEND_UNAVAILABLE', `The E2B sandbox is gone (${what}): ${message}`, {
      cause: error,
      details: { lost: true },
    });
  if (error instanceof FileNotFoundError || (error instanceof NotFoundError && path !== undefined))
    return new WsError('NOT_FOUND', `${path ?? what}: no such file or directory`, {
      cause: error,
      ...(details ? { details } : {}),
    });
  if (error instanceof AuthenticationError)
    return new WsError('PERMISSION_DENIED', `E2B refused the credentials (${what}): ${message}`, {
      cause: error,
    });
  // Refused without being done (the SDK has already waited out `Retry-After` within its time limit).
  if (error instanceof RateLimitError)
    return new WsError('BACKEND_UNAVAILABLE', `E2B is rate-limiting this key (${what}): ${message}`, {
      cause: error,
      details: { refused: true },
    });
  if (error instanceof ServiceBusyError)
    return new WsError('BACKEND_UNAVAILABLE', `E2B is busy (${what}): ${message}`, { cause: error });
  if (error instanceof TimeoutError)
    return new WsError('TIMEOUT', `E2B did not answer in time (${what}): ${message}`, { cause: error });
  const fileError = fileErrorFromMessage(error, message, path ?? what, details);
  if (fileError) return fileError;
  if (isNetworkFailure(error, message))
    return new WsError('BACKEND_UNAVAILABLE', `E2B cannot be reached (${what}): ${message}`, {
      cause: error,
      // A request given up after its time limit may have been done: never sent again blindly.
      ...(hasTimeoutAbort(error) ? { details: { timedOut: true } } : {}),
    });
  // The SDK names the HTTP status first ("500: …"), envd's RPC errors after the code ("2: [unknown]
  // HTTP 500"): a failing service, as an unreachable one.
  if (/^5\d\d: |\bHTTP 5\d\d\b|\[unavailable\]/.test(message))
    return new WsError('BACKEND_UNAVAILABLE', `E2B failed to serve ${what}: ${message}`, { cause: error });
  return new WsError('BACKEND_ERROR', `E2B ${what} failed: ${message}`, {
    cause: error,
    ...(details ? { details } : {}),
  });
}
