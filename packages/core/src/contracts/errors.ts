/**
 * Every failure that `@ws` raises on purpose is a {@link WsError} with one of these codes.
 *
 * - `INVALID_ARGUMENT`: the caller passed something unusable (a hostile id, a relative path where an
 *   absolute one is required, a NUL byte in an argument).
 * - `NOT_FOUND`: a file, directory, skill, MCP server or sandbox does not exist.
 * - `ALREADY_EXISTS`: the target of a create already exists.
 * - `IS_A_DIRECTORY` / `NOT_A_DIRECTORY`: a file operation met the other kind of entry.
 * - `PERMISSION_DENIED`: the backend refused the operation, or the path escapes what the sandbox allows.
 * - `TIMEOUT`: an operation (not a command: a command that times out is a result) ran out of time.
 * - `ABORTED`: the caller's `AbortSignal` fired; the work it started has been stopped.
 * - `DISPOSED`: the object was closed; nothing but `close()`/`destroy()` works on it any more.
 * - `NOT_READY`: the workspace has not been initialized yet.
 * - `CAPABILITY_UNSUPPORTED`: this backend cannot do what was asked (see `capabilities`).
 * - `BACKEND_UNAVAILABLE`: the backend cannot be reached (engine down, sandbox gone).
 * - `BACKEND_ERROR`: the backend answered with an error that fits no other code.
 * - `CONFLICT`: the operation clashes with current state (a duplicate name, a concurrent owner).
 * - `LIMIT_EXCEEDED`: a size or count limit was hit (archive too large, too many pages).
 * - `PACKAGE_INSTALL_FAILED`: an installer of the workspace's `packages` (apt, pip, npm) failed at open.
 */
export type WsErrorCode =
  | 'INVALID_ARGUMENT'
  | 'NOT_FOUND'
  | 'ALREADY_EXISTS'
  | 'IS_A_DIRECTORY'
  | 'NOT_A_DIRECTORY'
  | 'PERMISSION_DENIED'
  | 'TIMEOUT'
  | 'ABORTED'
  | 'DISPOSED'
  | 'NOT_READY'
  | 'CAPABILITY_UNSUPPORTED'
  | 'BACKEND_UNAVAILABLE'
  | 'BACKEND_ERROR'
  | 'CONFLICT'
  | 'LIMIT_EXCEEDED'
  | 'PACKAGE_INSTALL_FAILED';

const WS_ERROR_BRAND: unique symbol = Symbol.for('@ws/core.WsError');

/** Options accepted by the {@link WsError} constructor. */
export interface WsErrorOptions {
  /** The underlying error (a vendor SDK error, an errno error); kept as `error.cause`. */
  cause?: unknown;
  /** Structured facts about the failure (a path, an exit code, a limit), for programs rather than people. */
  details?: Record<string, unknown>;
}

/**
 * The one error type of @ws. Recognise it with {@link isWsError} (or `instanceof WsError`), which
 * works across duplicated copies of `@ws/core` because it checks a `Symbol.for` brand rather than
 * the class identity.
 */
export class WsError extends Error {
  /** What went wrong, as a stable code. */
  readonly code: WsErrorCode;
  /** Structured facts about the failure, when there are any. */
  readonly details: Readonly<Record<string, unknown>> | undefined;
  /** Marks a WsError from any copy of `@ws/core` (a `Symbol.for` key), for {@link isWsError}. */
  readonly [WS_ERROR_BRAND] = true;

  /** A failure with its code and message; `options.cause` is kept as `cause`. */
  constructor(code: WsErrorCode, message: string, options: WsErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'WsError';
    this.code = code;
    this.details = options.details;
  }

  /** Makes `instanceof WsError` true for a WsError from any copy of `@ws/core` (see {@link isWsError}). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isWsError(value);
  }
}

/**
 * True when `value` is a {@link WsError} from any copy of `@ws/core`; with `code`, also requires that code.
 */
export function isWsError(value: unknown, code?: WsErrorCode): value is WsError {
  if (typeof value !== 'object' || value === null) return false;
  if ((value as Record<symbol, unknown>)[WS_ERROR_BRAND] !== true) return false;
  return code === undefined || (value as WsError).code === code;
}

const ERRNO_CODES: Readonly<Record<string, WsErrorCode>> = {
  ENOENT: 'NOT_FOUND',
  EISDIR: 'IS_A_DIRECTORY',
  ENOTDIR: 'NOT_A_DIRECTORY',
  EEXIST: 'ALREADY_EXISTS',
  ENOTEMPTY: 'CONFLICT',
  EACCES: 'PERMISSION_DENIED',
  EPERM: 'PERMISSION_DENIED',
  EROFS: 'PERMISSION_DENIED',
  ELOOP: 'INVALID_ARGUMENT',
  ENAMETOOLONG: 'INVALID_ARGUMENT',
  EINVAL: 'INVALID_ARGUMENT',
  ABORT_ERR: 'ABORTED',
};

/**
 * Wraps an errno-style error (`{ code: 'ENOENT' }`) from Node or a POSIX tool in a {@link WsError},
 * keeping it as `cause`. A `WsError` passes through unchanged.
 */
export function fromErrno(error: unknown, message: string, details?: Record<string, unknown>): WsError {
  if (isWsError(error)) return error;
  const errno = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  const code = (typeof errno === 'string' && ERRNO_CODES[errno]) || 'BACKEND_ERROR';
  const reason = error instanceof Error ? error.message : String(error);
  return new WsError(code, `${message}: ${reason}`, {
    cause: error,
    details: { ...details, ...(typeof errno === 'string' ? { errno } : {}) },
  });
}

/**
 * Throws `ABORTED` when `signal` has fired. Every async method of `@ws` calls this before starting work.
 */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortError(signal);
}

/** The `ABORTED` error for a fired signal, keeping the signal's reason as `cause`. */
export function abortError(signal?: AbortSignal): WsError {
  return new WsError('ABORTED', 'The operation was aborted', { cause: signal?.reason });
}
