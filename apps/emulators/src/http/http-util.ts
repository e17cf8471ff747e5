import type { IncomingMessage, ServerResponse } from 'node:http';

/** An error that becomes an HTTP response `{code, message}` with `status`. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
    ...headers,
  });
  response.end(text);
}

/** E2B's error body: `{code: <HTTP status>, message}` (the SDK reads `code` to tell 404 from 409). */
export function sendError(response: ServerResponse, status: number, message: string): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  sendJson(response, status, { code: status, message });
}

export function sendEmpty(response: ServerResponse, status: number): void {
  response.writeHead(status);
  response.end();
}

/** The request body parsed as JSON; an empty body is `undefined`. */
export async function readJson(request: IncomingMessage, limitBytes = 1 << 20): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limitBytes) throw new HttpError(413, 'request body too large');
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8').trim();
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new HttpError(400, 'request body is not valid JSON');
  }
}

/** A plain object (not an array or null). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A JSON object parsed from `text`; anything else (no text, bad JSON, an array) is `{}`. */
export function jsonRecord(text: string | undefined): Record<string, unknown> {
  try {
    const value = JSON.parse(text ?? '{}') as unknown;
    return isRecord(value) ? value : {};
  } catch {
    return {};
  }
}

/** The string-valued entries of an object (anything else: none). */
export function stringRecord(value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!isRecord(value)) return out;
  for (const [key, item] of Object.entries(value)) if (typeof item === 'string') out[key] = item;
  return out;
}

/**
 * A request field that must be an object of strings (absent or null: `{}`); anything else throws
 * `invalid(reason)`, the vendor's own bad-request error.
 */
export function stringMap(
  value: unknown,
  field: string,
  invalid: (reason: string) => Error,
): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isRecord(value)) throw invalid(`${field} must be an object of strings`);
  const out: Record<string, string> = {};
  for (const [key, item] of Object.entries(value)) {
    if (typeof item !== 'string') throw invalid(`${field}.${key} must be a string`);
    out[key] = item;
  }
  return out;
}
