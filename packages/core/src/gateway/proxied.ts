import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { abortError, WsError } from '../contracts/errors.js';
import { GATEWAY_START_TIMEOUT_MS } from './link.js';
import { MuxEndpoint } from './mux.js';
import { GATEWAY_MUX_PATH, GATEWAY_MUX_UPGRADE } from './protocol.js';
import type { ProxiedEndpoint } from './start.js';

// What the gateway writes to stderr once it listens on a port.
const LISTENING = /gateway: serving on 127\.0\.0\.1:(\d{1,5})\n/;
// Stderr kept while waiting for that line; the line comes first, so little is ever needed.
const WATCH_CHARS = 16_384;

/** Waits for a gateway's "serving on 127.0.0.1:<port>" line in its stderr. */
export class PortWatch {
  private text = '';
  private readonly found: Promise<number>;
  private settle!: { resolve(port: number): void; reject(error: Error): void };

  constructor() {
    this.found = new Promise<number>((resolve, reject) => {
      this.settle = { resolve, reject };
    });
    this.found.catch(() => {});
  }

  push(chunk: Uint8Array): void {
    if (this.text.length > WATCH_CHARS) return;
    this.text += Buffer.from(chunk).toString('utf8');
    const match = LISTENING.exec(this.text);
    if (match) this.settle.resolve(Number(match[1]));
  }

  fail(error: Error): void {
    this.settle.reject(error);
  }

  /** The port, once the gateway said it; rejects when it exits first, on abort, or after the start-up time. */
  async port(signal: AbortSignal | undefined): Promise<number> {
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    try {
      return await Promise.race([
        this.found,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () =>
              reject(
                new WsError(
                  'BACKEND_UNAVAILABLE',
                  `The gateway did not say which port it listens on within ${GATEWAY_START_TIMEOUT_MS} ms`,
                ),
              ),
            GATEWAY_START_TIMEOUT_MS,
          );
          onAbort = () => reject(abortError(signal));
          if (signal?.aborted) onAbort();
          else signal?.addEventListener('abort', onAbort, { once: true });
        }),
      ]);
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    }
  }
}

/**
 * Opens one connection to a gateway's port through `endpoint` (a vendor's reverse proxy), upgrades
 * it (see `GATEWAY_MUX_UPGRADE`) and runs a {@link MuxEndpoint} over it, pinging so the gateway
 * knows the host is there.
 * @throws WsError `BACKEND_UNAVAILABLE` when the proxy or the gateway refuses, `ABORTED`, `TIMEOUT`.
 */
export function upgradeToMux(
  endpoint: ProxiedEndpoint,
  token: string,
  signal: AbortSignal | undefined,
  onNoise: (line: string) => void,
  pingMs = 10_000,
): Promise<MuxEndpoint> {
  let url: URL;
  try {
    url = new URL(`${endpoint.url.replace(/\/+$/, '')}${GATEWAY_MUX_PATH}`);
  } catch (error) {
    return Promise.reject(
      new WsError('BACKEND_ERROR', `The sandbox's endpoint is not a URL: ${endpoint.url}`, { cause: error }),
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return Promise.reject(
      new WsError('BACKEND_ERROR', `The sandbox's endpoint is not http(s): ${endpoint.url}`),
    );
  const where = `${url.protocol}//${url.host}${url.pathname}`;
  return new Promise<MuxEndpoint>((resolve, reject) => {
    const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
      method: 'GET',
      headers: {
        ...endpoint.headers,
        connection: 'Upgrade',
        upgrade: GATEWAY_MUX_UPGRADE,
        authorization: `Bearer ${token}`,
      },
    });
    let done = false;
    const finish = (error: Error | undefined, mux?: MuxEndpoint) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (error) {
        request.destroy();
        reject(error);
      } else resolve(mux as MuxEndpoint);
    };
    const onAbort = () => finish(abortError(signal));
    if (signal?.aborted) return finish(abortError(signal));
    signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(
      () =>
        finish(
          new WsError(
            'TIMEOUT',
            `Connecting to the gateway through ${where} took over ${GATEWAY_START_TIMEOUT_MS} ms`,
          ),
        ),
      GATEWAY_START_TIMEOUT_MS,
    );
    request.on('error', (error) =>
      finish(
        new WsError(
          'BACKEND_UNAVAILABLE',
          `Connecting to the gateway through ${where} failed: ${error.message}`,
          {
            cause: error,
          },
        ),
      ),
    );
    request.on('response', (response) => {
      // No upgrade: the proxy or the gateway said why in its body.
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (text: string) => {
        if (body.length < 500) body += text;
      });
      response.on('end', () =>
        finish(
          new WsError(
            'BACKEND_UNAVAILABLE',
            `The gateway's port behind ${where} answered ${response.statusCode} instead of switching protocols${body.trim() ? `: ${body.trim().slice(0, 300)}` : ''}`,
            { details: { status: response.statusCode } },
          ),
        ),
      );
      response.on('error', (error) => finish(error));
    });
    request.on('upgrade', (response, socket: Socket, head: Buffer) => {
      if (String(response.headers.upgrade ?? '').toLowerCase() !== GATEWAY_MUX_UPGRADE) {
        socket.destroy();
        finish(
          new WsError(
            'BACKEND_UNAVAILABLE',
            `${where} switched to ${String(response.headers.upgrade)}, not the gateway's streams`,
          ),
        );
        return;
      }
      socket.setNoDelay(true);
      const mux = new MuxEndpoint({
        send: (text) =>
          new Promise<void>((resolveSend, rejectSend) =>
            socket.write(text, (error) => (error ? rejectSend(error) : resolveSend())),
          ),
        onNoise,
        pingMs,
        // The gateway pings as often: three pings unheard, the connection stalled (a proxy that
        // stopped forwarding without closing it).
        silenceMs: 3 * pingMs,
        // Closing the channel (the gateway stopped, the host let go) ends the connection.
        onClose: () => socket.destroy(),
      });
      const decoder = new TextDecoder();
      socket.on('data', (chunk: Buffer) => mux.receive(decoder.decode(chunk, { stream: true })));
      if (head.length > 0) mux.receive(head.toString('utf8'));
      const closed = (error?: Error) =>
        mux.close(
          new Error(
            `the connection to the gateway through ${where} closed${error ? `: ${error.message}` : ''}`,
          ),
        );
      socket.on('error', closed);
      socket.on('close', () => closed());
      finish(undefined, mux);
    });
    request.end();
  });
}
