import type { ServerResponse } from 'node:http';
import { HttpError } from '../http/http-util.js';
import type { E2BLimits } from './limits.js';
import { DEFAULT_TIMEOUT_SECONDS } from './sandbox-registry.js';

// How the control plane answers requests against E2B's limits (see `E2B_LIMITS`).

type ApiLimits = Readonly<Record<keyof E2BLimits, number>>;

/** A whole number of seconds, as the API's request validator takes it. */
export function integerSeconds(value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw new HttpError(400, 'Error when parsing request: timeout must be an integer (seconds)');
  }
  return value;
}

/** The longest timeout in hours, as the API states it (whole hours there; exact here, for a lowered limit). */
function maxHours(limits: ApiLimits): string {
  return String(limits.timeoutMaxMs / 3_600_000);
}

/** A create's timeout: positive, at most the longest a sandbox may run (default when absent). */
export function createTimeoutSeconds(limits: ApiLimits, value: unknown): number {
  if (value === undefined || value === null) return DEFAULT_TIMEOUT_SECONDS;
  const seconds = integerSeconds(value);
  if (seconds <= 0) throw new HttpError(400, 'Timeout must be greater than 0');
  if (seconds * 1000 > limits.timeoutMaxMs)
    throw new HttpError(400, `Timeout cannot be greater than ${maxHours(limits)} hours`);
  return seconds;
}

/** A connect's timeout (the SDK leaves it out unless given: then E2B's default), at most the longest a sandbox may run. */
export function connectTimeoutSeconds(limits: ApiLimits, value: unknown): number {
  const seconds = value === undefined || value === null ? DEFAULT_TIMEOUT_SECONDS : integerSeconds(value);
  if (seconds * 1000 > limits.timeoutMaxMs)
    throw new HttpError(400, `Timeout cannot be greater than ${maxHours(limits)} hours`);
  return Math.max(0, seconds);
}

/** The API's request size limiter's answer: plain text, and the connection closed. */
export function tooLarge(response: ServerResponse): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  response.writeHead(413, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' });
  response.end('request too large');
}
