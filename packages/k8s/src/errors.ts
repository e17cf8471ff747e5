import { ApiException } from '@kubernetes/client-node';
import type { WsError, WsErrorCode } from '@ws/core';
import { responseHeader, retryAfterMs, type VendorErrorClass, vendorErrorMapper } from '@ws/core/backend';
import { isRequestTimeout } from './api.js';

/** What the API server said, from a `Status` body. */
export interface K8sStatus {
  readonly code: number | undefined;
  readonly reason: string | undefined;
  readonly message: string | undefined;
}

/** The HTTP status and the `Status` body of an API error, or undefined for any other error. */
export function statusOf(error: unknown): K8sStatus | undefined {
  if (!(error instanceof ApiException)) return undefined;
  const raw: unknown = (error as ApiException<unknown>).body;
  let body: { reason?: unknown; message?: unknown } | undefined;
  if (typeof raw === 'string') {
    try {
      body = JSON.parse(raw) as typeof body;
    } catch {
      body = { message: raw };
    }
  } else if (raw !== null && typeof raw === 'object') body = raw as typeof body;
  return {
    code: (error as ApiException<unknown>).code,
    reason: typeof body?.reason === 'string' ? body.reason : undefined,
    message: typeof body?.message === 'string' ? body.message : undefined,
  };
}

/** The HTTP status of an API error (undefined for other errors). */
export function httpCode(error: unknown): number | undefined {
  return statusOf(error)?.code;
}

/**
 * The WsError for an error of the Kubernetes API, `(error, what)`: 401 and 403 are
 * `PERMISSION_DENIED` (RBAC names the verb and resource), 404 `NOT_FOUND`, 409 `CONFLICT`, 400 and
 * 422 `INVALID_ARGUMENT` (a name, label or annotation past the API server's limits among them), 413
 * `LIMIT_EXCEEDED` (a body over the API server's request size limit, 3 MiB by default), a throttled
 * (429, retried after its `Retry-After` by the calls that may repeat), failing or unreachable server
 * `BACKEND_UNAVAILABLE`. The HTTP
 * status and the `Status` reason are kept in `details.httpCode` and `details.reason`.
 */
export const translateK8sError: (error: unknown, what: string) => WsError = vendorErrorMapper({
  vendor: 'Kubernetes',
  messageOf(error) {
    const status = statusOf(error);
    if (status) return status.message ?? status.reason ?? `HTTP ${status.code}`;
    return error instanceof Error ? error.message : String(error);
  },
  classify(error, message, _path, what): VendorErrorClass | undefined {
    const status = statusOf(error);
    if (!status) {
      // Given up after `requestTimeoutMs`: the API server may have done it.
      if (isRequestTimeout(error)) return { kind: 'no-answer', details: { mayHaveRun: true } };
      return undefined;
    }
    const details = { httpCode: status.code, reason: status.reason };
    const said = (code: WsErrorCode, text: string): VendorErrorClass => ({ code, message: text, details });
    const code = status.code ?? 0;
    if (code === 401 || code === 403)
      return said('PERMISSION_DENIED', `Kubernetes refused ${what}: ${message}`);
    if (code === 404) return said('NOT_FOUND', `Kubernetes: ${what}: ${message}`);
    if (code === 409) return said('CONFLICT', `Kubernetes: ${what}: ${message}`);
    if (code === 422 || code === 400)
      return said('INVALID_ARGUMENT', `Kubernetes rejected ${what}: ${message}`);
    // The API server reads no more than its request size limit: the object is too large to store.
    if (code === 413)
      return said('LIMIT_EXCEEDED', `Kubernetes refused ${what}: ${message} (the request body is too large)`);
    // Refused without being done (the API server's priority and fairness, or a quota): safe to repeat.
    if (code === 429) {
      const headers = (error as ApiException<unknown>).headers;
      return {
        kind: 'rate-limited',
        retryAfterMs: retryAfterMs(responseHeader(headers, 'retry-after')),
        details,
      };
    }
    if (code >= 500) return { kind: 'failing', details };
    return said('BACKEND_ERROR', `Kubernetes ${what} failed: ${message}`);
  },
});
