import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { sendJson } from '../http/http-util.js';
import type { ExecdErrorBody, LifecycleErrorBody } from './wire-types.js';

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

/**
 * A request the emulator does not implement (`what`: `METHOD /path`): answered as the server answers an
 * unknown route, and reported as unimplemented.
 */
export class UnimplementedRequest extends OpenSandboxHttpError {
  constructor(
    readonly what: string,
    status = 404,
    code = 'NOT_FOUND',
  ) {
    super(status, code, `Cannot ${what}`);
  }
}

export const notFound = (message: string): OpenSandboxHttpError =>
  new OpenSandboxHttpError(404, 'NOT_FOUND', message);

/** The lifecycle server's 404 for a sandbox it does not know (Docker runtime's wording). */
export const sandboxNotFound = (sandboxId: string): OpenSandboxHttpError =>
  new OpenSandboxHttpError(404, 'DOCKER::SANDBOX_NOT_FOUND', `Sandbox ${sandboxId} not found.`);

/**
 * A request FastAPI refuses before the server's code runs (a field out of its bounds): 422 with
 * pydantic's `detail` list instead of `{code, message}`.
 */
export class ValidationFailure extends OpenSandboxHttpError {
  constructor(
    readonly location: readonly (string | number)[],
    message: string,
    readonly input: unknown,
  ) {
    super(422, 'VALIDATION_ERROR', message);
  }
}

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
  if (error instanceof ValidationFailure) {
    sendJson(response, 422, {
      detail: [{ type: 'value_error', loc: error.location, msg: error.message, input: error.input }],
    });
    return;
  }
  const body: LifecycleErrorBody & ExecdErrorBody = { code: error.code, message: error.message };
  sendJson(response, error.status, body);
}
