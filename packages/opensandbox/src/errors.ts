import {
  SandboxApiException,
  SandboxError,
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
 * be reached, is failing or rate-limiting, or a sandbox that is not running, is `BACKEND_UNAVAILABLE`;
 * a request the server's validation refused (a timeout out of its bounds, metadata that is not a
 * Kubernetes label) is `INVALID_ARGUMENT`, and a body too large for a proxy in front of execd is
 * `LIMIT_EXCEEDED`.
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
  // uvicorn's `limit_concurrency`: a plain-text 503 before the server looked at the request.
  if (status === 503 && code === SandboxError.UNEXPECTED_RESPONSE) return { kind: 'rate-limited' };
  if (status === 413)
    return {
      code: 'LIMIT_EXCEEDED',
      message: `OpenSandbox ${what}: the request is larger than the service takes (${message})`,
    };
  // FastAPI's validation (a field out of its bounds), or the server's own checks of a parameter.
  if (status === 422 || (status === 400 && /^SANDBOX::INVALID_(PARAMETER|METADATA_LABEL)$/.test(code ?? '')))
    return {
      code: 'INVALID_ARGUMENT',
      message: `OpenSandbox refused ${what}: ${status === 422 ? validationMessage(error) : message}`,
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

/** The first message of FastAPI's 422 body (`{detail: [{loc, msg}]}`), with where it applies. */
function validationMessage(error: SandboxApiException): string {
  const detail = (error.rawBody as { detail?: unknown } | undefined)?.detail;
  const first = Array.isArray(detail)
    ? (detail[0] as { loc?: unknown; msg?: unknown } | undefined)
    : undefined;
  if (!first || typeof first.msg !== 'string') return error.message;
  return Array.isArray(first.loc) ? `${first.loc.join('.')}: ${first.msg}` : first.msg;
}

/**
 * The server's longest sandbox timeout, in seconds, when `error` is its refusal of a longer one
 * ("Sandbox timeout Ns exceeds configured maximum of Ms."); undefined for any other error.
 */
export function configuredTimeoutMaximum(error: unknown): number | undefined {
  if (!(error instanceof SandboxApiException) || error.statusCode !== 400) return undefined;
  const match = /exceeds configured maximum of (\d+)s/.exec(error.error.message ?? error.message);
  return match ? Number(match[1]) : undefined;
}

/** Whether `error` is a request refused as too large (413, from a proxy in front of execd). */
export function isTooLarge(error: unknown): boolean {
  return error instanceof SandboxApiException && error.statusCode === 413;
}
