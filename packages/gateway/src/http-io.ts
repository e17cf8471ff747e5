import type { IncomingMessage, ServerResponse } from 'node:http';
import { isWsError, WsError, type WsErrorCode } from '@ws/core';
import type { GatewayExecRequest } from '@ws/core/gateway';

const STATUS: Partial<Record<WsErrorCode, number>> = {
  INVALID_ARGUMENT: 400,
  NOT_FOUND: 404,
  ALREADY_EXISTS: 409,
  CONFLICT: 409,
  IS_A_DIRECTORY: 409,
  NOT_A_DIRECTORY: 409,
  PERMISSION_DENIED: 403,
  TIMEOUT: 504,
  ABORTED: 499,
  LIMIT_EXCEEDED: 413,
  CAPABILITY_UNSUPPORTED: 501,
  BACKEND_UNAVAILABLE: 502,
};

/** Sends `error` as a JSON error body with its code's HTTP status; cuts a response already under way. */
export function sendError(response: ServerResponse, error: unknown): void {
  const wrapped = isWsError(error)
    ? error
    : new WsError('BACKEND_ERROR', error instanceof Error ? error.message : String(error));
  if (response.headersSent) {
    response.destroy();
    return;
  }
  const body = JSON.stringify({
    error: {
      code: wrapped.code,
      message: wrapped.message,
      ...(wrapped.details ? { details: wrapped.details } : {}),
    },
  });
  response.writeHead(STATUS[wrapped.code] ?? 500, { 'content-type': 'application/json' }).end(body);
}

/** Sends `value` as a 200 JSON body (`null` for `undefined`). */
export function sendJson(response: ServerResponse, value: unknown): void {
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(value ?? null));
}

/** The most a JSON request body (or an exec request's header line) may hold. */
export const MAX_JSON_BODY_BYTES = 64 * 1024 * 1024;

const tooLarge = () =>
  new WsError('LIMIT_EXCEEDED', `The request body is larger than ${MAX_JSON_BODY_BYTES} bytes`, {
    details: { limit: MAX_JSON_BODY_BYTES },
  });

/**
 * The request's body parsed as JSON.
 * @throws WsError `LIMIT_EXCEEDED` past {@link MAX_JSON_BODY_BYTES}; `INVALID_ARGUMENT` for malformed JSON.
 */
export async function readJson<T>(request: IncomingMessage): Promise<T> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_JSON_BODY_BYTES) throw tooLarge();
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as T;
  } catch {
    throw new WsError('INVALID_ARGUMENT', 'The request body is not valid JSON');
  }
}

/** Splits the exec request: its JSON header line, then (for streamed stdin) the rest of the body. */
export async function readExecRequest(
  request: IncomingMessage,
): Promise<{ header: GatewayExecRequest; rest: AsyncIterable<Uint8Array> }> {
  const iterator = request[Symbol.asyncIterator]();
  const before: Buffer[] = [];
  let size = 0;
  for (;;) {
    const next = await iterator.next();
    if (next.done) throw new WsError('INVALID_ARGUMENT', 'The exec request ended before its JSON line');
    const chunk = next.value as Buffer;
    const newline = chunk.indexOf(10);
    if (newline === -1) {
      size += chunk.length;
      if (size > MAX_JSON_BODY_BYTES) throw tooLarge();
      before.push(chunk);
      continue;
    }
    let header: GatewayExecRequest;
    try {
      header = JSON.parse(Buffer.concat([...before, chunk.subarray(0, newline)]).toString('utf8'));
    } catch {
      throw new WsError('INVALID_ARGUMENT', 'The exec request does not start with a JSON line');
    }
    const leftover = chunk.subarray(newline + 1);
    const rest: AsyncIterable<Uint8Array> = {
      async *[Symbol.asyncIterator]() {
        if (leftover.length > 0) yield leftover;
        for (;;) {
          const more = await iterator.next();
          if (more.done) return;
          yield more.value as Uint8Array;
        }
      },
    };
    return { header, rest };
  }
}

/** The request's body, which fails unless it arrived whole: a cut-off upload must not be committed. */
export async function* wholeBody(request: IncomingMessage): AsyncGenerator<Uint8Array> {
  yield* request as AsyncIterable<Uint8Array>;
  if (!request.complete)
    throw new WsError('ABORTED', 'The upload was cut off before its end; nothing was written');
}

/** A path segment of the URL, decoded. @throws WsError `INVALID_ARGUMENT` for a malformed escape. */
export function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new WsError('INVALID_ARGUMENT', `Malformed URL segment ${JSON.stringify(segment)}`);
  }
}

/** A signal that fires when the connection closes before `response` was sent whole. */
export function abortedOnClose(response: ServerResponse): AbortSignal {
  const controller = new AbortController();
  response.on('close', () => {
    if (!response.writableFinished) controller.abort();
  });
  return controller.signal;
}
