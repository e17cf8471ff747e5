import {
  SandboxApiException,
  SandboxException,
  SandboxReadyTimeoutException,
} from '@alibaba-group/opensandbox';
import { type VendorErrorClass, vendorErrorMapper } from '@ws/core/backend';

/** The SDK's own request time limit (`requestTimeoutMs`): the service did not answer. */
const REQUEST_TIMED_OUT = /^\[http\] Request timed out/;

/**
 * The WsError for an error of the OpenSandbox SDK, `(error, what, path?)`. With `path` (a file
 * operation), a 404 is `NOT_FOUND`; without it, a 404 means the sandbox is gone and is
 * `BACKEND_UNAVAILABLE` with `details.lost`. A refused key is `PERMISSION_DENIED`; a server that cannot
 * be reached, is failing or rate-limiting, or a sandbox that is not running, is `BACKEND_UNAVAILABLE`.
 */
export const translateOpenSandboxError = vendorErrorMapper({
  vendor: 'OpenSandbox',
  messageOf: (error) =>
    error instanceof SandboxException
      ? (error.error.message ?? error.message)
      : error instanceof Error
        ? error.message
        : String(error),
  classify(error, message, path, what): VendorErrorClass | undefined {
    if (error instanceof SandboxReadyTimeoutException)
      return {
        code: 'TIMEOUT',
        message: `The OpenSandbox sandbox did not become ready (${what}): ${message}`,
      };
    if (error instanceof SandboxApiException) return classifyStatus(error, message, path, what);
    if (REQUEST_TIMED_OUT.test(message)) return { kind: 'no-answer' };
    if ((error as Error)?.name === 'TimeoutError' && !(error instanceof DOMException))
      return { kind: 'timeout' };
    return undefined;
  },
});

/** What an answer of the OpenSandbox server means, by its status and error code. */
function classifyStatus(
  error: SandboxApiException,
  message: string,
  path: string | undefined,
  what: string,
): VendorErrorClass | undefined {
  const status = error.statusCode ?? 0;
  const code = error.error.code;
  const subject = path ?? what;
  // A file the sandbox lacks, or (no file in question, or a sandbox named) the sandbox itself.
  if (status === 404 && (code === 'FILE_NOT_FOUND' || (path !== undefined && !/sandbox/i.test(message))))
    return { kind: 'missing-file' };
  if (status === 404) return { kind: 'gone' };
  if (status === 401) return { kind: 'credentials' };
  if (status === 403)
    return { code: 'PERMISSION_DENIED', message: `${subject}: permission denied (${message})` };
  if (status === 400 && code === 'INVALID_FILE_TYPE')
    return {
      code: /not a directory/i.test(message) ? 'NOT_A_DIRECTORY' : 'IS_A_DIRECTORY',
      message: `${subject}: ${message}`,
    };
  if (status === 409 || status === 503)
    return {
      code: 'BACKEND_UNAVAILABLE',
      message: `The OpenSandbox sandbox is not available (${what}): ${message}`,
    };
  // Refused without being done: safe to send again.
  if (status === 429) return { kind: 'rate-limited' };
  // A failing service (500, 502, 504).
  if (status >= 500) return { kind: 'failing' };
  return { code: 'BACKEND_ERROR', message: `OpenSandbox ${what} failed (${status} ${code}): ${message}` };
}
