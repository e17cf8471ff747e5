import { ApiException } from '@kubernetes/client-node';
import { isWsError, WsError } from '@ws/core';
import { isNetworkFailure, retryAfterMs } from '@ws/core/backend';
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

function messageOf(error: unknown): string {
  const status = statusOf(error);
  if (status) return status.message ?? status.reason ?? `HTTP ${status.code}`;
  return error instanceof Error ? error.message : String(error);
}

/**
 * The WsError for an error of the Kubernetes API: 401 and 403 are `PERMISSION_DENIED` (RBAC names
 * the verb and resource), 404 `NOT_FOUND`, 409 `CONFLICT`, 422 `INVALID_ARGUMENT`, a server or
 * network failure `BACKEND_UNAVAILABLE`. The `Status` reason is kept in `details.reason`.
 */
export function translateK8sError(error: unknown, what: string): WsError {
  if (isWsError(error)) return error;
  const status = statusOf(error);
  const message = messageOf(error);
  const details = status ? { httpCode: status.code, reason: status.reason } : undefined;
  const make = (code: ConstructorParameters<typeof WsError>[0], text: string) =>
    new WsError(code, text, { cause: error, ...(details ? { details } : {}) });
  if (status) {
    if (status.code === 401 || status.code === 403)
      return make('PERMISSION_DENIED', `Kubernetes refused ${what}: ${message}`);
    if (status.code === 404) return make('NOT_FOUND', `Kubernetes: ${what}: ${message}`);
    if (status.code === 409) return make('CONFLICT', `Kubernetes: ${what}: ${message}`);
    if (status.code === 422 || status.code === 400)
      return make('INVALID_ARGUMENT', `Kubernetes rejected ${what}: ${message}`);
    // Refused without being done (the API server's priority and fairness, or a quota): safe to repeat.
    if (status.code === 429) {
      const raw = (error as ApiException<unknown>).headers;
      const after = retryAfterMs(raw?.['retry-after'] ?? raw?.['Retry-After']);
      return new WsError('BACKEND_UNAVAILABLE', `Kubernetes is throttling ${what}: ${message}`, {
        cause: error,
        details: { ...details, refused: true, ...(after !== undefined ? { retryAfterMs: after } : {}) },
      });
    }
    if (status.code !== undefined && status.code >= 500)
      return make('BACKEND_UNAVAILABLE', `Kubernetes could not serve ${what}: ${message}`);
    return make('BACKEND_ERROR', `Kubernetes ${what} failed: ${message}`);
  }
  if (isRequestTimeout(error))
    return new WsError(
      'BACKEND_UNAVAILABLE',
      `The Kubernetes API did not answer ${what} within the request time limit (requestTimeoutMs); it may have been done`,
      { cause: error, details: { timedOut: true, mayHaveRun: true } },
    );
  if (isNetworkFailure(error, message))
    return new WsError('BACKEND_UNAVAILABLE', `The Kubernetes API cannot be reached (${what}): ${message}`, {
      cause: error,
    });
  return new WsError('BACKEND_ERROR', `Kubernetes ${what} failed: ${message}`, { cause: error });
}
