import { isWsError, WsError, type WsErrorCode } from '../contracts/errors.js';

/**
 * The WsError for a vendor's file error known only by its message (`… is a directory`, `… not a
 * directory`, `… permission denied`), naming `subject` (the path, or what was being done); undefined
 * for any other message.
 */
export function fileErrorFromMessage(
  error: unknown,
  message: string,
  subject: string,
  details?: Record<string, unknown>,
): WsError | undefined {
  const extra = { cause: error, ...(details ? { details } : {}) };
  if (/is a directory/i.test(message))
    return new WsError('IS_A_DIRECTORY', `${subject}: is a directory`, extra);
  if (/not a directory/i.test(message))
    return new WsError('NOT_A_DIRECTORY', `${subject}: a parent is not a directory`, extra);
  if (/permission denied/i.test(message))
    return new WsError('PERMISSION_DENIED', `${subject}: permission denied`, extra);
  return undefined;
}

/** Whether a vendor SDK's error is the network failing (refused, unresolved, unreachable, reset, timed out). */
export function isNetworkFailure(error: unknown, message: string): boolean {
  const code = errnoOf(error);
  return (
    // A request given up after its time limit (`AbortSignal.timeout`): the service did not answer.
    hasTimeoutAbort(error) ||
    code === 'ECONNREFUSED' ||
    code === 'ENOTFOUND' ||
    code === 'ECONNRESET' ||
    code === 'EHOSTUNREACH' ||
    code === 'ETIMEDOUT' ||
    /fetch failed|socket hang up|request to .* failed/i.test(message) ||
    // undici's word for a response cut off mid-body (the connection closed), alone or after an RPC code.
    /(?:^|\] )terminated$/.test(message)
  );
}

/**
 * Whether an error, or one of its causes, is the `TimeoutError` of a request's time-limit signal
 * (`AbortSignal.timeout`): the service did not answer in time, and the request may have been done.
 */
export function hasTimeoutAbort(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current; depth++) {
    if ((current as { name?: unknown }).name === 'TimeoutError' && current instanceof DOMException)
      return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** The first errno code (`ECONNREFUSED`, …) along an error's chain of causes. */
function errnoOf(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current; depth++) {
    const code = (current as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * What a vendor's error means, as a backend classifies it for {@link vendorErrorMapper}:
 * - `missing-file`: the file asked for is not there (`NOT_FOUND`, with the path);
 * - `gone`: the sandbox itself no longer exists (`BACKEND_UNAVAILABLE`, `details.lost`), never `NOT_FOUND`;
 * - `credentials`: the key was refused or missing (`PERMISSION_DENIED`);
 * - `rate-limited`: refused without being done (`BACKEND_UNAVAILABLE`, `details.refused`, safe to send again);
 * - `timeout`: the operation itself ran out of time (`TIMEOUT`);
 * - `no-answer`: a request given up after its time limit (`BACKEND_UNAVAILABLE`, `details.timedOut`: it may
 *   have been done, so it is never sent again blindly);
 * - `unreachable`: the service cannot be reached (`BACKEND_UNAVAILABLE`);
 * - `failing`: the service answered with a failure of its own, a `5xx` (`BACKEND_UNAVAILABLE`).
 */
export type VendorErrorKind =
  | 'missing-file'
  | 'gone'
  | 'credentials'
  | 'rate-limited'
  | 'timeout'
  | 'no-answer'
  | 'unreachable'
  | 'failing';

/**
 * A backend's reading of one vendor error: one of the shared kinds (with the service's `Retry-After`
 * for `rate-limited`), or a code and message of its own for what only that vendor says. `details` are
 * added to the WsError's.
 */
export type VendorErrorClass =
  | {
      /** The shared kind the error is; its code and message are the same on every backend. */
      readonly kind: VendorErrorKind;
      /**
       * How long the service asks to wait before a retry, in milliseconds (its `Retry-After`); used for
       * `rate-limited`.
       */
      readonly retryAfterMs?: number | undefined;
      /** Facts added to the WsError's `details`. */
      readonly details?: Record<string, unknown> | undefined;
    }
  | {
      /** The WsError's code. */
      readonly code: WsErrorCode;
      /** The WsError's message. */
      readonly message: string;
      /** Facts added to the WsError's `details`. */
      readonly details?: Record<string, unknown> | undefined;
    };

/** How one vendor's errors read: what {@link vendorErrorMapper} needs. */
export interface VendorErrors {
  /** The vendor's name in messages (`E2B`, `Daytona`). */
  readonly vendor: string;
  /** The text of an error. Default: its `message`. */
  messageOf?(error: unknown): string;
  /**
   * What an error means; undefined for one the vendor's SDK does not mark, which then is a file error
   * known by its message, the network failing (`no-answer` for a request's time limit, else
   * `unreachable`), or `BACKEND_ERROR`. A file error known by its message (`… is a directory`) wins
   * over `failing` and `unreachable` too: some services answer it as a failure.
   * @param message The error's text ({@link VendorErrors.messageOf}).
   * @param path The file in question, for a file operation.
   * @param what What was being done, for a message of the backend's own.
   */
  classify(
    error: unknown,
    message: string,
    path: string | undefined,
    what: string,
  ): VendorErrorClass | undefined;
}

/** The words each kind is said with, after the vendor's name or about its sandbox. */
const SAID: Record<VendorErrorKind, { code: WsErrorCode; text: (vendor: string, what: string) => string }> = {
  'missing-file': { code: 'NOT_FOUND', text: (_, what) => `${what}: no such file or directory` },
  gone: { code: 'BACKEND_UNAVAILABLE', text: (vendor, what) => `The ${vendor} sandbox is gone (${what})` },
  credentials: {
    code: 'PERMISSION_DENIED',
    text: (vendor, what) => `${vendor} refused the credentials (${what})`,
  },
  'rate-limited': {
    code: 'BACKEND_UNAVAILABLE',
    text: (vendor, what) => `${vendor} is rate-limiting this key (${what})`,
  },
  timeout: { code: 'TIMEOUT', text: (vendor, what) => `${vendor} did not answer in time (${what})` },
  'no-answer': {
    code: 'BACKEND_UNAVAILABLE',
    text: (vendor, what) =>
      `${vendor} did not answer within the request's time limit (${what}); it may have been done`,
  },
  unreachable: {
    code: 'BACKEND_UNAVAILABLE',
    text: (vendor, what) => `${vendor} cannot be reached (${what})`,
  },
  failing: { code: 'BACKEND_UNAVAILABLE', text: (vendor, what) => `${vendor} failed to serve ${what}` },
};

/** The facts each kind carries in `details`. */
function detailsOf(kind: VendorErrorKind, retryAfter: number | undefined): Record<string, unknown> {
  if (kind === 'gone') return { lost: true };
  if (kind === 'rate-limited')
    return { refused: true, ...(retryAfter !== undefined ? { retryAfterMs: retryAfter } : {}) };
  if (kind === 'no-answer') return { timedOut: true };
  return {};
}

/**
 * One vendor's error translator: `(error, what, path?) => WsError`, where `what` says what was being
 * done (`reading /x`, `creating the sandbox`) and `path` is the file of a file operation. A WsError
 * passes through; every other error is classified by `spec` and said the same way on every backend.
 */
export function vendorErrorMapper(
  spec: VendorErrors,
): (error: unknown, what: string, path?: string) => WsError {
  return (error, what, path) => {
    if (isWsError(error)) return error;
    const message = spec.messageOf?.(error) ?? (error instanceof Error ? error.message : String(error));
    const pathDetails = path !== undefined ? { path } : {};
    const found = spec.classify(error, message, path, what);
    if (found && 'code' in found) {
      const details = { ...pathDetails, ...found.details };
      return new WsError(found.code, found.message, {
        cause: error,
        ...(Object.keys(details).length > 0 ? { details } : {}),
      });
    }
    let kind = found?.kind;
    // A file error known by its message, even from a service that answered it as a failure.
    if (kind === undefined || kind === 'failing' || kind === 'unreachable') {
      const fileError = fileErrorFromMessage(
        error,
        message,
        path ?? what,
        path !== undefined ? pathDetails : undefined,
      );
      if (fileError) return fileError;
    }
    // A request given up after its time limit (`AbortSignal.timeout`) may have been done.
    if (kind === undefined && hasTimeoutAbort(error)) kind = 'no-answer';
    else if (kind === undefined && isNetworkFailure(error, message)) kind = 'unreachable';
    if (kind === undefined)
      return new WsError('BACKEND_ERROR', `${spec.vendor} ${what} failed: ${message}`, {
        cause: error,
        ...(path !== undefined ? { details: pathDetails } : {}),
      });
    const said = SAID[kind];
    const subject = kind === 'missing-file' ? (path ?? what) : what;
    const text =
      kind === 'missing-file'
        ? said.text(spec.vendor, subject)
        : `${said.text(spec.vendor, subject)}: ${message}`;
    const details = {
      ...(kind === 'missing-file' ? pathDetails : {}),
      ...detailsOf(kind, found?.retryAfterMs),
      ...found?.details,
    };
    return new WsError(said.code, text, {
      cause: error,
      ...(Object.keys(details).length > 0 ? { details } : {}),
    });
  };
}

/** One header of a vendor error's response (a plain object, a `Headers`, axios' headers), by lower-case name. */
export function responseHeader(headers: unknown, name: string): unknown {
  if (headers === null || typeof headers !== 'object') return undefined;
  const get = (headers as { get?: unknown }).get;
  if (typeof get === 'function') return (get as (key: string) => unknown).call(headers, name);
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value;
  return undefined;
}
