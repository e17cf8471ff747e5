import {
  SandboxApiException,
  SandboxException,
  SandboxReadyTimeoutException,
} from '@alibaba-group/opensandbox';
import { isWsError, WsError } from '@ws/core';
import { hasTimeoutAbort, isNetworkFailure } from '@ws/core/backend';

function messageOf(error: unknown): string {
  if (error instanceof SandboxException) return error.error.message ?? error.message;
  return error instanceof Error ? error.message : String(error);
}

/**
 * The WsError for an error of the OpenSandbox SDK. With `path` (a file operation), a 404 is
 * `NOT_FOUND`; without it, a 404 means the sandbox is gone and is `BACKEND_UNAVAILABLE` with
 * `details.lost`. A refused key is `PERMISSION_DENIED`; a server that cannot be reached, or a
 * sandbox that is not running, is `BACKEND_UNAVAILABLE`.
 */
export function translateOpenSandboxError(error: unknown, what: string, path?: string): WsError {
  if (isWsError(error)) return error;
  const message = messageOf(error);
  const details = path !== undefined ? { path } : undefined;
  if (error instanceof SandboxReadyTimeoutException)
    return new WsError('TIMEOUT', `The OpenSandbox sandbox did not become ready (${what}): ${message}`, {
      cause: error,
    });
  if (error instanceof SandboxApiException) {
    const status = error.statusCode ?? 0;
    const code = error.error.code;
    // A file the sandbox lacks, or (no file in question, or a sandbox named) the sandbox itself.
    if (status === 404 && (code === 'FILE_NOT_FOUND' || (path !== undefined && !/sandbox/i.test(message))))
      return new WsError('NOT_FOUND', `${path ?? what}: no such file or directory`, {
        cause: error,
        ...(details ? { details } : {}),
      });
    if (status === 404)
      return new WsError('BACKEND_UNAVAILABLE', `The OpenSandbox sandbox is gone (${what}): ${message}`, {
        cause: error,
        details: { lost: true },
      });
    if (status === 401)
      return new WsError('PERMISSION_DENIED', `OpenSandbox refused the credentials (${what}): ${message}`, {
        cause: error,
      });
    if (status === 403)
      return new WsError('PERMISSION_DENIED', `${path ?? what}: permission denied (${message})`, {
        cause: error,
        ...(details ? { details } : {}),
      });
    if (status === 400 && code === 'INVALID_FILE_TYPE')
      return new WsError(
        /not a directory/i.test(message) ? 'NOT_A_DIRECTORY' : 'IS_A_DIRECTORY',
        `${path ?? what}: ${message}`,
        {
          cause: error,
          ...(details ? { details } : {}),
        },
      );
    if (status === 409 || status === 503)
      return new WsError(
        'BACKEND_UNAVAILABLE',
        `The OpenSandbox sandbox is not available (${what}): ${message}`,
        {
          cause: error,
        },
      );
    // Refused without being done: safe to send again.
    if (status === 429)
      return new WsError(
        'BACKEND_UNAVAILABLE',
        `OpenSandbox is rate-limiting this key (${what}): ${message}`,
        {
          cause: error,
          details: { refused: true },
        },
      );
    // A failing service (500, 502, 504), as an unreachable one.
    if (status >= 500)
      return new WsError(
        'BACKEND_UNAVAILABLE',
        `OpenSandbox failed to serve ${what} (${status}): ${message}`,
        {
          cause: error,
        },
      );
    return new WsError('BACKEND_ERROR', `OpenSandbox ${what} failed (${status} ${code}): ${message}`, {
      cause: error,
      ...(details ? { details } : {}),
    });
  }
  // The SDK's own request time limit (`requestTimeoutMs`): the service did not answer.
  if (isNetworkFailure(error, message) || /^\[http\] Request timed out/.test(message)) {
    // A request given up after its time limit may have been done: never sent again blindly.
    const timedOut = hasTimeoutAbort(error) || /^\[http\] Request timed out/.test(message);
    return new WsError('BACKEND_UNAVAILABLE', `OpenSandbox cannot be reached (${what}): ${message}`, {
      cause: error,
      ...(timedOut ? { details: { timedOut: true } } : {}),
    });
  }
  if ((error as Error)?.name === 'TimeoutError')
    return new WsError('TIMEOUT', `OpenSandbox did not answer in time (${what}): ${message}`, {
      cause: error,
    });
  return new WsError('BACKEND_ERROR', `OpenSandbox ${what} failed: ${message}`, {
    cause: error,
    ...(details ? { details } : {}),
  });
}
