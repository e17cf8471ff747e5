import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { sendJson } from '../http/http-util.js';

/** A failed request: becomes OpenSandbox's error body `{code, message}` with `status`. */
export class OpenSandboxHttpError extends Error {
  constructor(
    readonly status: number,
    /** The machine-readable code (`NOT_FOUND`, `INVALID_REQUEST`, …). */
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export const notFound = (message: string): OpenSandboxHttpError =>
  new OpenSandboxHttpError(404, 'NOT_FOUND', message);

export const invalid = (message: string): OpenSandboxHttpError =>
  new OpenSandboxHttpError(400, 'INVALID_REQUEST', message);

/** A new `X-Request-ID` value. */
export function requestId(): string {
  return randomUUID().replaceAll('-', '');
}

/** Sends `{code, message}`; a response whose head is already out is cut instead. */
export function sendOpenSandboxError(response: ServerResponse, error: OpenSandboxHttpError): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  sendJson(response, error.status, { code: error.code, message: error.message });
}
