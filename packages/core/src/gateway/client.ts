import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Duplex } from 'node:stream';
import { abortError, WsError, type WsErrorCode } from '../errors.js';
import type { Sandbox } from '../sandbox.js';
import { ChunkQueue } from '../streams.js';
import type { GatewayErrorBody, GatewayHealth } from './protocol.js';

/**
 * How the host reaches the gateway: a unix socket in a directory both sides see, a port bound to
 * 127.0.0.1, or a relay command run inside the sandbox through `exec` for each request. Never a
 * container's bridge address or any other non-loopback address.
 */
export type GatewayChannel =
  | { readonly kind: 'unix'; readonly socketPath: string }
  | { readonly kind: 'tcp'; readonly port: number }
  | {
      readonly kind: 'relay';
      readonly sandbox: Sandbox;
      /** The socket path or port inside the sandbox. */
      readonly target: string;
      /** The sandbox's node executable. */
      readonly node: string;
    };

/** Options of one gateway request. */
export interface GatewayRequestOptions {
  body?: Uint8Array | string | AsyncIterable<Uint8Array>;
  headers?: Record<string, string>;
  /** Time limit for the whole request, in milliseconds; none when undefined. */
  timeoutMs?: number | undefined;
  signal?: AbortSignal | undefined;
  /** Leave out the token (health checks never send it). */
  anonymous?: boolean;
}

// Connects to the gateway inside the sandbox and copies bytes both ways; it ends when the gateway
// closes the connection (each relayed request asks for `Connection: close`).
const RELAY_SCRIPT = `const net=require('net');const t=process.argv[1];
const s=/^\\d+$/.test(t)?net.connect(Number(t),'127.0.0.1'):net.connect(t);
s.on('error',e=>{process.stderr.write(String(e&&e.message||e));process.exit(3)});
process.stdin.pipe(s,{end:false});s.pipe(process.stdout);s.on('close',()=>process.exit(0));`;

/** A connection-level failure: the gateway could not be reached at all. */
export function isConnectionFailure(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return (
    code === 'ECONNREFUSED' ||
    code === 'ENOENT' ||
    code === 'ECONNRESET' ||
    code === 'EPIPE' ||
    code === 'GATEWAY_RELAY_FAILED'
  );
}

function relayConnection(channel: Extract<GatewayChannel, { kind: 'relay' }>): Duplex {
  const input = new ChunkQueue();
  let stderr = '';
  const duplex = new Duplex({
    write(chunk: Buffer, _encoding, callback) {
      input.push(chunk).then(() => callback(), callback);
    },
    final(callback) {
      callback();
    },
    read() {},
    destroy(error, callback) {
      input.end();
      callback(error);
    },
  });
  channel.sandbox
    .exec([channel.node, '-e', RELAY_SCRIPT, channel.target], {
      stdin: input.iterate(),
      maxOutputBytes: 0,
      onStdout: (chunk) => {
        duplex.push(Buffer.from(chunk));
      },
      onStderr: (chunk) => {
        stderr += new TextDecoder().decode(chunk);
      },
    })
    .then(
      (result) => {
        if (result.exitCode !== 0) {
          duplex.destroy(
            Object.assign(new Error(`gateway relay exited with ${result.exitCode}: ${stderr.trim()}`), {
              code: 'GATEWAY_RELAY_FAILED',
            }),
          );
        } else duplex.push(null);
      },
      (error: unknown) => duplex.destroy(error as Error),
    );
  return duplex;
}

/**
 * The host's HTTP client of one gateway launch. Requests carry the launch's bearer token; a direct
 * channel keeps connections alive, a relay opens one per request.
 */
export class GatewayClient {
  private readonly agent: Agent | undefined;

  constructor(
    readonly channel: GatewayChannel,
    private readonly token: string,
  ) {
    this.agent = channel.kind === 'relay' ? undefined : new Agent({ keepAlive: true, maxSockets: 64 });
  }

  /** Sends one request and resolves with the response (status not checked). */
  request(method: string, path: string, options: GatewayRequestOptions = {}): Promise<IncomingMessage> {
    const { channel } = this;
    if (options.signal?.aborted) return Promise.reject(abortError(options.signal));
    const headers: Record<string, string> = { ...options.headers };
    if (!options.anonymous) headers.authorization = `Bearer ${this.token}`;
    if (channel.kind === 'relay') headers.connection = 'close';
    return new Promise<IncomingMessage>((resolve, reject) => {
      const request = httpRequest({
        method,
        path,
        headers,
        ...(channel.kind === 'unix' ? { socketPath: channel.socketPath, agent: this.agent } : {}),
        ...(channel.kind === 'tcp' ? { host: '127.0.0.1', port: channel.port, agent: this.agent } : {}),
        ...(channel.kind === 'relay' ? { createConnection: () => relayConnection(channel) } : {}),
      });
      let timer: NodeJS.Timeout | undefined;
      const fail = (error: unknown) => {
        if (timer) clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        reject(error);
      };
      const onAbort = () => {
        request.destroy();
        fail(abortError(options.signal));
      };
      options.signal?.addEventListener('abort', onAbort, { once: true });
      if (options.timeoutMs !== undefined) {
        timer = setTimeout(() => {
          request.destroy();
          fail(
            new WsError(
              'TIMEOUT',
              `The gateway did not answer ${method} ${path} within ${options.timeoutMs} ms`,
            ),
          );
        }, options.timeoutMs);
      }
      request.on('error', (error) => fail(error));
      request.on('response', (response) => {
        if (timer) clearTimeout(timer);
        response.on('close', () => options.signal?.removeEventListener('abort', onAbort));
        resolve(response);
      });
      const body = options.body;
      if (body === undefined) request.end();
      else if (typeof body === 'string' || body instanceof Uint8Array) request.end(body);
      else {
        (async () => {
          for await (const chunk of body) {
            if (!request.write(chunk)) await new Promise((done) => request.once('drain', done));
          }
          request.end();
        })().catch((error: unknown) => request.destroy(error as Error));
      }
    });
  }

  /** Sends a request and returns its JSON answer; an error answer becomes the WsError it describes. */
  async json<T>(
    method: string,
    path: string,
    body?: unknown,
    options: Omit<GatewayRequestOptions, 'body'> = {},
  ): Promise<T> {
    const response = await this.request(method, path, {
      ...options,
      ...(body !== undefined
        ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...options.headers } }
        : {}),
    });
    const text = await readText(response);
    if ((response.statusCode ?? 500) >= 400) throw errorFromResponse(response.statusCode ?? 500, text);
    return (text === '' ? null : JSON.parse(text)) as T;
  }

  /** The gateway's health, or undefined when it does not answer well within `timeoutMs`. */
  async health(timeoutMs = 2_000): Promise<GatewayHealth | undefined> {
    try {
      return await this.json<GatewayHealth>('GET', '/health', undefined, { timeoutMs, anonymous: true });
    } catch {
      return undefined;
    }
  }

  /** Drops kept-alive connections. */
  close(): void {
    this.agent?.destroy();
  }
}

/** Reads a whole response body as UTF-8. */
export async function readText(response: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The WsError an error answer of the gateway describes. */
export function errorFromResponse(status: number, text: string): WsError {
  try {
    const body = JSON.parse(text) as GatewayErrorBody;
    if (body?.error?.code)
      return new WsError(
        body.error.code as WsErrorCode,
        body.error.message,
        body.error.details ? { details: body.error.details } : {},
      );
  } catch {
    // not a JSON error body
  }
  return new WsError('BACKEND_ERROR', `The gateway answered ${status}: ${text.slice(0, 500)}`);
}
