import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Duplex } from 'node:stream';
import { ChunkQueue } from '../backend/streams.js';
import { abortError, fromErrno, isWsError, WsError, type WsErrorCode } from '../contracts/errors.js';
import type { Sandbox } from '../contracts/sandbox.js';
import type { MuxEndpoint } from './mux.js';
import type { GatewayErrorBody, GatewayHealth } from './protocol.js';

/**
 * How the host reaches the gateway: a unix socket in a directory both sides see, a port bound to
 * 127.0.0.1, a relay command run inside the sandbox through `exec` for each request, or streams
 * multiplexed over the gateway process's own stdin and stdout (`mux`). Never a container's bridge
 * address or any other non-loopback address.
 */
export type GatewayChannel =
  | {
      /** A unix socket the host connects to. */
      readonly kind: 'unix';
      /** The socket's path on the host. */
      readonly socketPath: string;
    }
  | {
      /** A TCP port on 127.0.0.1. */
      readonly kind: 'tcp';
      /** The port number. */
      readonly port: number;
    }
  | {
      /** Streams multiplexed over the gateway process's stdin and stdout, or over one upgraded connection. */
      readonly kind: 'mux';
      /** The host's side of the multiplexed channel. */
      readonly mux: MuxEndpoint;
    }
  | {
      /** A relay command run inside the sandbox through `exec` for each request. */
      readonly kind: 'relay';
      /** The sandbox whose `exec` runs the relay. */
      readonly sandbox: Sandbox;
      /** The socket path or port inside the sandbox. */
      readonly target: string;
      /** The sandbox's node executable. */
      readonly node: string;
      /**
       * How the relay writes what the gateway sends: `binary` (default) as it is; `base64`, one line
       * per chunk, for a sandbox whose command output reaches the host only as text (a vendor SDK
       * that decodes stdout as UTF-8 would corrupt the bytes otherwise).
       */
      readonly output?: 'binary' | 'base64';
    };

/** Options of one gateway request. */
export interface GatewayRequestOptions {
  /** What the request sends: bytes, text, or a stream of chunks. Default: nothing. */
  body?: Uint8Array | string | AsyncIterable<Uint8Array>;
  /** Headers besides the token's. */
  headers?: Record<string, string>;
  /** Time limit for the whole request, in milliseconds; none when undefined. */
  timeoutMs?: number | undefined;
  /** Cancels the request when it fires. */
  signal?: AbortSignal | undefined;
  /** Leave out the token (health checks never send it). */
  anonymous?: boolean;
}

// Connects to the gateway inside the sandbox and copies bytes both ways; it ends when the gateway
// closes the connection (each relayed request asks for \`Connection: close\`). Exit 3: the connection
// could not be made (nothing reached the gateway); exit 4: it broke after it was made.
const RELAY_SCRIPT = `const net=require('net');const t=process.argv[1];let up=false;
const s=/^\\d+$/.test(t)?net.connect(Number(t),'127.0.0.1'):net.connect(t);
s.on('connect',()=>{up=true});
s.on('error',e=>{process.stderr.write(String(e&&e.message||e));process.exit(up?4:3)});
process.stdin.pipe(s,{end:false});s.pipe(process.stdout);s.on('close',()=>process.exit(0));`;
// The same, writing the gateway's bytes as base64 lines; it exits once stdout has taken them all.
const RELAY_SCRIPT_BASE64 = `const net=require('net');const t=process.argv[1];let up=false;
const s=/^\\d+$/.test(t)?net.connect(Number(t),'127.0.0.1'):net.connect(t);
s.on('connect',()=>{up=true});
s.on('error',e=>{process.stderr.write(String(e&&e.message||e));process.exit(up?4:3)});
process.stdin.pipe(s,{end:false});s.on('data',d=>process.stdout.write(d.toString('base64')+'\\n'));
s.on('close',()=>process.stdout.write('',()=>process.exit(0)));`;

/** The most a JSON answer of the gateway may hold: an answer past it is refused, not buffered. */
export const GATEWAY_MAX_JSON_BYTES = 64 * 1024 * 1024;

/**
 * A request that failed because the connection to the gateway failed. `reached` tells whether any
 * of it may have reached the gateway: when false, nothing was sent and the request can be made
 * again another way; when true, its effect may have happened and it must not be repeated.
 */
export class GatewayConnectionError extends Error {
  /** Whether any of the request may have reached the gateway (then it must not be repeated). */
  readonly reached: boolean;

  /** The failure, whether it `reached` the gateway, and the error beneath it. */
  constructor(message: string, reached: boolean, cause: unknown) {
    super(message, { cause });
    this.name = 'GatewayConnectionError';
    this.reached = reached;
  }
}

/** A connection-level failure: the gateway could not be reached, or the connection broke. */
export function isConnectionFailure(error: unknown): error is GatewayConnectionError {
  return error instanceof GatewayConnectionError;
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
  const base64 = channel.output === 'base64';
  const decoder = new TextDecoder();
  let pending = '';
  channel.sandbox
    .exec([channel.node, '-e', base64 ? RELAY_SCRIPT_BASE64 : RELAY_SCRIPT, channel.target], {
      stdin: input.iterate(),
      maxOutputBytes: 0,
      onStdout: (chunk) => {
        if (!base64) {
          duplex.push(Buffer.from(chunk));
          return;
        }
        pending += decoder.decode(chunk, { stream: true });
        let end = pending.indexOf('\n');
        while (end !== -1) {
          if (end > 0) duplex.push(Buffer.from(pending.slice(0, end), 'base64'));
          pending = pending.slice(end + 1);
          end = pending.indexOf('\n');
        }
      },
      onStderr: (chunk) => {
        stderr += new TextDecoder().decode(chunk);
      },
    })
    .then(
      (result) => {
        if (result.exitCode !== 0) {
          const message = `gateway relay exited with ${result.exitCode}: ${stderr.trim()}`;
          duplex.destroy(new GatewayConnectionError(message, result.exitCode !== 3, undefined));
        } else duplex.push(null);
      },
      // The relay command never ran: nothing reached the gateway.
      (error: unknown) =>
        duplex.destroy(
          new GatewayConnectionError(`the gateway relay could not start: ${error}`, false, error),
        ),
    );
  return duplex;
}

/**
 * The host's HTTP client of one gateway launch. Requests carry the launch's bearer token; a direct
 * channel keeps connections alive, a relay or a multiplexed channel opens one per request.
 */
export class GatewayClient {
  private readonly agent: Agent | undefined;

  /**
   * A client; connects on the first request.
   * @param channel How the gateway is reached.
   * @param token The launch's bearer token.
   */
  constructor(
    readonly channel: GatewayChannel,
    private readonly token: string,
  ) {
    this.agent =
      channel.kind === 'relay' || channel.kind === 'mux'
        ? undefined
        : new Agent({ keepAlive: true, maxSockets: 64 });
  }

  /**
   * Sends one request and resolves with the response (status not checked). A streamed body is read
   * only once the connection is made, so a request that could not connect leaves it unread.
   * @throws GatewayConnectionError when the connection fails (see `reached`); WsError `TIMEOUT`, `ABORTED`.
   */
  request(method: string, path: string, options: GatewayRequestOptions = {}): Promise<IncomingMessage> {
    const { channel } = this;
    if (options.signal?.aborted) return Promise.reject(abortError(options.signal));
    const headers: Record<string, string> = { ...options.headers };
    if (!options.anonymous) headers.authorization = `Bearer ${this.token}`;
    // One stream per request: no kept-alive connection, so none can be closed under a request.
    if (channel.kind === 'relay' || channel.kind === 'mux') headers.connection = 'close';
    return new Promise<IncomingMessage>((resolve, reject) => {
      const request = httpRequest({
        method,
        path,
        headers,
        ...(channel.kind === 'unix' ? { socketPath: channel.socketPath, agent: this.agent } : {}),
        ...(channel.kind === 'tcp' ? { host: '127.0.0.1', port: channel.port, agent: this.agent } : {}),
        ...(channel.kind === 'relay' ? { createConnection: () => relayConnection(channel) } : {}),
        ...(channel.kind === 'mux' ? { createConnection: () => channel.mux.open() } : {}),
      });
      // Whether the connection was made, so that bytes of this request may have reached the gateway.
      let connected = false;
      let timer: NodeJS.Timeout | undefined;
      const fail = (error: unknown) => {
        if (timer) clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        if (isWsError(error) || error instanceof GatewayConnectionError) reject(error);
        else {
          const reason = error instanceof Error ? error.message : String(error);
          reject(new GatewayConnectionError(`${method} ${path}: ${reason}`, connected, error));
        }
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
              { details: { mayHaveRun: connected } },
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
      const send = () => {
        connected = true;
        if (body === undefined) request.end();
        else if (typeof body === 'string' || body instanceof Uint8Array) request.end(body);
        else {
          (async () => {
            for await (const chunk of body) {
              if (!request.write(chunk)) await new Promise((done) => request.once('drain', done));
            }
            request.end();
          })().catch((error: unknown) => {
            // The caller's stream failed, not the connection: say so.
            fail(isWsError(error) ? error : fromErrno(error, `Reading the body of ${method} ${path} failed`));
            request.destroy();
          });
        }
      };
      request.once('socket', (socket) => {
        if ((channel.kind === 'unix' || channel.kind === 'tcp') && socket.connecting)
          socket.once('connect', send);
        else send();
      });
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
    return parseGatewayJson<T>(text);
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

/**
 * Reads a whole response body as UTF-8, at most `limit` bytes: a longer answer is refused.
 * @throws WsError `LIMIT_EXCEEDED`; `BACKEND_UNAVAILABLE` when the connection breaks meanwhile.
 */
export async function readText(response: IncomingMessage, limit = GATEWAY_MAX_JSON_BYTES): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of response) {
      size += (chunk as Buffer).length;
      if (size > limit) {
        response.destroy();
        throw new WsError('LIMIT_EXCEEDED', `The gateway's answer is larger than ${limit} bytes`, {
          details: { limit },
        });
      }
      chunks.push(chunk as Buffer);
    }
  } catch (error) {
    if (isWsError(error)) throw error;
    throw new WsError(
      'BACKEND_UNAVAILABLE',
      `The connection to the gateway broke: ${(error as Error).message}`,
      {
        cause: error,
        details: { mayHaveRun: true },
      },
    );
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Parses a JSON answer of the gateway. @throws WsError `BACKEND_ERROR` for malformed JSON. */
export function parseGatewayJson<T>(text: string): T {
  if (text === '') return null as T;
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    throw new WsError('BACKEND_ERROR', `The gateway answered with malformed JSON: ${text.slice(0, 200)}`, {
      cause: error,
    });
  }
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
