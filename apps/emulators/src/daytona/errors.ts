import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import { sendJson } from '../http/http-util.js';

/** The `code` values of the toolbox daemon's errors that the SDK maps to its own error classes. */
export type DaemonErrorCode =
  | 'FILE_NOT_FOUND'
  | 'FILE_ACCESS_DENIED'
  | 'INVALID_FILE_PATH'
  | 'PROCESS_EXECUTION_TIMEOUT'
  | 'PROCESS_NOT_FOUND'
  | 'SESSION_ENDED'
  | 'COMMAND_ALREADY_COMPLETED'
  | 'BAD_REQUEST'
  | 'INVALID_REQUEST_BODY'
  | 'UNAUTHORIZED'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'GONE'
  | 'INTERNAL_SERVER_ERROR';

/** A failed request: becomes Daytona's JSON error body with `status`. */
export class DaytonaHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The daemon's error code (toolbox answers only). */
    readonly code?: DaemonErrorCode,
    /** Headers of the answer (a rate limit's `Retry-After-<throttler>`). */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

/** A request the emulator does not implement: answered 404 (405 for a known path), and reported. */
export class UnimplementedRequest extends DaytonaHttpError {}

const DEFAULT_CODES: Readonly<Record<number, DaemonErrorCode>> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  404: 'NOT_FOUND',
  409: 'CONFLICT',
  410: 'GONE',
  500: 'INTERNAL_SERVER_ERROR',
};

/**
 * The control plane's error body, as its catch-all exception filter writes it: `{path, timestamp,
 * statusCode, error, message}` (`path` with the query string).
 */
export function sendApiError(
  request: IncomingMessage,
  response: ServerResponse,
  error: DaytonaHttpError,
): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  const { status, message, headers } = error;
  sendJson(
    response,
    status,
    {
      path: request.url ?? '/',
      timestamp: new Date().toISOString(),
      statusCode: status,
      error: STATUS_CODES[status] ?? 'Error',
      message,
    },
    { ...headers },
  );
}

/**
 * The toolbox daemon's error body (`ErrorResponse`): `{statusCode, message, code, source, path, method,
 * timestamp}`; the SDK picks its error class from `source` and `code` (e.g. `FILE_NOT_FOUND`).
 */
export function sendToolboxError(
  request: IncomingMessage,
  response: ServerResponse,
  status: number,
  message: string,
  code?: DaemonErrorCode,
): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  sendJson(response, status, daemonErrorBody(status, message, code, request));
}

/** The daemon's JSON error object (also the body of a bulk-download `error` part). */
export function daemonErrorBody(
  status: number,
  message: string,
  code: DaemonErrorCode | undefined,
  request?: IncomingMessage,
): Record<string, unknown> {
  return {
    statusCode: status,
    message,
    code: code ?? DEFAULT_CODES[status] ?? 'INTERNAL_SERVER_ERROR',
    source: 'DAYTONA_DAEMON',
    ...(request
      ? { path: new URL(request.url ?? '/', 'http://emulator').pathname, method: request.method }
      : {}),
    timestamp: new Date().toISOString(),
  };
}
