import { WsError } from '../contracts/errors.js';

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
    /fetch failed|socket hang up|request to .* failed/i.test(message)
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
