import { randomUUID, timingSafeEqual } from 'node:crypto';
import { realpath } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { posix } from 'node:path';
import { isWsError, WsError, type WsErrorCode } from '@ws/core';
import type { McpConnector, McpSession } from '@ws/core/backend';
import {
  GATEWAY_PROTOCOL_VERSION,
  type GatewayExecFrame,
  type GatewayExecRequest,
  type GatewayFileOp,
  type GatewayHealth,
  type GatewayMcpCall,
  type GatewayMcpConnect,
  normalizeMcpSpec,
} from '@ws/core/gateway';
import { LocalSandbox } from '@ws/local/sandbox';

/** Options of {@link createGatewayServer}. */
export interface GatewayServerOptions {
  /** Bearer token every request but `/health` must carry. */
  token: string;
  /** Reported by `/health`, so the host can tell this launch from an older one. */
  nonce: string;
  /** Default working directory of commands and MCP servers. */
  workdir: string;
  /** When set, file operations must resolve (symbolic links followed) under one of these roots. */
  allowedRoots?: readonly string[];
}

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

function sendError(response: ServerResponse, error: unknown): void {
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

function sendJson(response: ServerResponse, value: unknown): void {
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(value ?? null));
}

/** The most a JSON request body (or an exec request's header line) may hold. */
export const MAX_JSON_BODY_BYTES = 64 * 1024 * 1024;

const tooLarge = () =>
  new WsError('LIMIT_EXCEEDED', `The request body is larger than ${MAX_JSON_BODY_BYTES} bytes`, {
    details: { limit: MAX_JSON_BODY_BYTES },
  });

async function readJson<T>(request: IncomingMessage): Promise<T> {
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
async function readExecRequest(
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
async function* wholeBody(request: IncomingMessage): AsyncGenerator<Uint8Array> {
  yield* request as AsyncIterable<Uint8Array>;
  if (!request.complete)
    throw new WsError('ABORTED', 'The upload was cut off before its end; nothing was written');
}

/** A path segment of the URL, decoded. @throws WsError `INVALID_ARGUMENT` for a malformed escape. */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new WsError('INVALID_ARGUMENT', `Malformed URL segment ${JSON.stringify(segment)}`);
  }
}

/**
 * The gateway's HTTP server: commands, files and MCP sessions, inside the sandbox it runs in.
 * Returns the server, not yet listening.
 */
export function createGatewayServer(options: GatewayServerOptions): Server {
  const sandbox = new LocalSandbox({ workdir: options.workdir });
  // The MCP client (the SDK, zod, ajv) loads on the first MCP request, so the gateway starts fast.
  let connector: Promise<McpConnector> | undefined;
  const mcpConnector = () => {
    connector ??= import('@ws/local/mcp').then(
      ({ HostMcpConnector }) => new HostMcpConnector({ cwd: options.workdir }),
    );
    return connector;
  };
  const sessions = new Map<
    string,
    { session: McpSession; agentId: string; sessionId: string; name: string }
  >();
  const expected = Buffer.from(`Bearer ${options.token}`);
  const authorized = (request: IncomingMessage) => {
    const given = Buffer.from(request.headers.authorization ?? '');
    return given.length === expected.length && timingSafeEqual(given, expected);
  };

  /** Resolves a path the way the sandbox sees it and refuses one that lands outside the allowed roots. */
  const confined = async (path: string): Promise<string> => {
    if (typeof path !== 'string' || path === '' || path.includes('\0'))
      throw new WsError('INVALID_ARGUMENT', 'A path must be a non-empty string without NUL');
    const absolute = posix.resolve(options.workdir, path);
    const roots = options.allowedRoots;
    if (!roots) return absolute;
    // The deepest existing ancestor decides where the path really leads.
    let existing = absolute;
    let rest = '';
    for (;;) {
      try {
        const real = await realpath(existing);
        const resolved = rest ? posix.join(real, rest) : real;
        if (!roots.some((root) => resolved === root || resolved.startsWith(`${root}/`))) {
          throw new WsError('PERMISSION_DENIED', `${path} leads outside ${roots.join(' and ')}`, {
            details: { path, resolved },
          });
        }
        return absolute;
      } catch (error) {
        if (isWsError(error)) throw error;
        if (existing === '/') throw new WsError('PERMISSION_DENIED', `${path} cannot be resolved`);
        rest = rest ? posix.join(posix.basename(existing), rest) : posix.basename(existing);
        existing = posix.dirname(existing);
      }
    }
  };

  const exec = async (request: IncomingMessage, response: ServerResponse) => {
    const { header, rest } = await readExecRequest(request);
    const controller = new AbortController();
    response.on('close', () => {
      if (!response.writableFinished) controller.abort();
    });
    response.writeHead(200, { 'content-type': 'application/x-ndjson' });
    const frame = (value: GatewayExecFrame) => {
      if (response.write(`${JSON.stringify(value)}\n`)) return undefined;
      return new Promise<void>((resolve) => response.once('drain', resolve));
    };
    // With `maxOutputBytes`, each stream sends its head and counts the rest as dropped.
    const cap =
      typeof header.maxOutputBytes === 'number' && header.maxOutputBytes >= 0
        ? header.maxOutputBytes
        : undefined;
    const sent = { o: 0, e: 0 };
    let dropped = false;
    const output = (t: 'o' | 'e', chunk: Uint8Array) => {
      let bytes = chunk;
      if (cap !== undefined) {
        const room = Math.max(0, cap - sent[t]);
        if (bytes.byteLength > room) {
          dropped = true;
          bytes = bytes.subarray(0, room);
        }
        if (bytes.byteLength === 0) return undefined;
      }
      sent[t] += bytes.byteLength;
      return frame({ t, d: Buffer.from(bytes).toString('base64') });
    };
    try {
      const result = await sandbox.exec(header.argv, {
        ...(header.cwd ? { cwd: header.cwd } : {}),
        ...(header.env ? { env: header.env } : {}),
        ...(header.stdin === 'stream'
          ? { stdin: rest }
          : header.stdin !== undefined
            ? { stdin: Buffer.from(header.stdin, 'base64') }
            : {}),
        ...(header.timeoutMs !== undefined ? { timeoutMs: header.timeoutMs } : {}),
        signal: controller.signal,
        maxOutputBytes: 0,
        onStdout: (chunk) => output('o', chunk),
        onStderr: (chunk) => output('e', chunk),
      });
      // With nothing kept, the result holds only what the sandbox wrote itself (a missing executable's message).
      if (result.stdout.byteLength > 0) await output('o', result.stdout);
      if (result.stderr.byteLength > 0) await output('e', result.stderr);
      await frame({
        t: 'x',
        exitCode: result.exitCode,
        timedOut: result.timedOut,
        ...(result.signal ? { signal: result.signal } : {}),
        ...(dropped ? { truncated: true } : {}),
      });
    } catch (error) {
      const wrapped = isWsError(error) ? error : new WsError('BACKEND_ERROR', String(error));
      await frame({ t: 'f', error: { code: wrapped.code, message: wrapped.message } });
    }
    response.end();
  };

  const fileOp = async (op: GatewayFileOp): Promise<unknown> => {
    const path = await confined(op.path);
    switch (op.op) {
      case 'stat':
        return sandbox.stat(path);
      case 'list':
        return sandbox.list(path);
      case 'remove':
        await sandbox.remove(path, { recursive: op.recursive ?? false, force: op.force ?? false });
        return null;
      case 'mkdir':
        await sandbox.mkdir(path, { recursive: op.recursive ?? false });
        return null;
      case 'rename':
        await sandbox.rename(path, await confined(op.to));
        return null;
      default:
        throw new WsError(
          'INVALID_ARGUMENT',
          `Unknown file operation ${JSON.stringify((op as { op?: unknown }).op)}`,
        );
    }
  };

  const route = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    let url: URL;
    try {
      url = new URL(request.url ?? '/', 'http://gateway');
    } catch {
      throw new WsError('INVALID_ARGUMENT', 'Malformed request URL');
    }
    const method = request.method ?? 'GET';
    if (url.pathname === '/health' && method === 'GET') {
      const health: GatewayHealth = {
        status: 'ok',
        nonce: options.nonce,
        protocol: GATEWAY_PROTOCOL_VERSION,
        pid: process.pid,
        node: process.version,
      };
      sendJson(response, health);
      return;
    }
    if (!authorized(request)) {
      response
        .writeHead(401, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { code: 'PERMISSION_DENIED', message: 'invalid gateway token' } }));
      return;
    }
    if (url.pathname === '/exec' && method === 'POST') return exec(request, response);
    if (url.pathname === '/files') {
      const path = await confined(url.searchParams.get('path') ?? '');
      if (method === 'GET') {
        const stream = await sandbox.readStream(path);
        response.writeHead(200, { 'content-type': 'application/octet-stream' });
        for await (const chunk of stream) {
          if (!response.write(chunk)) await new Promise((resolve) => response.once('drain', resolve));
        }
        response.end();
        return;
      }
      if (method === 'PUT') {
        const mode = url.searchParams.get('mode');
        await sandbox.writeStream(path, wholeBody(request), mode ? { mode: Number.parseInt(mode, 8) } : {});
        sendJson(response, null);
        return;
      }
    }
    if (url.pathname === '/files/op' && method === 'POST') {
      sendJson(response, await fileOp(await readJson<GatewayFileOp>(request)));
      return;
    }
    if (url.pathname === '/mcp/sessions' && method === 'POST') {
      const body = await readJson<GatewayMcpConnect>(request);
      const spec = normalizeMcpSpec(body.spec as never);
      const session = await (await mcpConnector()).connect(spec, {
        agentId: body.agentId ?? '',
        sessionId: body.sessionId ?? '',
      });
      const id = randomUUID();
      sessions.set(id, {
        session,
        agentId: body.agentId ?? '',
        sessionId: body.sessionId ?? '',
        name: spec.name,
      });
      sendJson(response, { id, tools: await session.listTools() });
      return;
    }
    if (url.pathname === '/mcp/sessions' && method === 'GET') {
      const agentId = url.searchParams.get('agentId') ?? '';
      const sessionId = url.searchParams.get('sessionId') ?? '';
      const list = [...sessions.entries()]
        .filter(([, entry]) => entry.agentId === agentId && entry.sessionId === sessionId)
        .map(([id, entry]) => ({ id, name: entry.name }));
      sendJson(response, { sessions: list });
      return;
    }
    const match = /^\/mcp\/sessions\/([^/]+)(?:\/(tools|call))?$/.exec(url.pathname);
    if (match) {
      const id = decodeSegment(match[1]!);
      const entry = sessions.get(id);
      if (!entry) throw new WsError('NOT_FOUND', `No MCP session ${id} in this gateway`);
      if (match[2] === 'tools' && method === 'GET') {
        sendJson(response, { tools: await entry.session.listTools() });
        return;
      }
      if (match[2] === 'call' && method === 'POST') {
        const body = await readJson<GatewayMcpCall>(request);
        const controller = new AbortController();
        response.on('close', () => {
          if (!response.writableFinished) controller.abort();
        });
        sendJson(
          response,
          await entry.session.callTool(body.name, body.input ?? {}, {
            timeoutMs: body.timeoutMs,
            signal: controller.signal,
          }),
        );
        return;
      }
      if (match[2] === undefined && method === 'DELETE') {
        sessions.delete(id);
        await entry.session.close();
        sendJson(response, null);
        return;
      }
    }
    throw new WsError('NOT_FOUND', `No route for ${method} ${url.pathname}`);
  };

  const server = createServer((request, response) => {
    route(request, response).catch((error: unknown) => sendError(response, error));
  });
  // Idle connections stay open until the host closes them: a connection the gateway closes is then
  // always its death, which the host reports, never a race with a request in flight. Uploads and
  // commands may take as long as they take.
  server.keepAliveTimeout = 0;
  server.requestTimeout = 0;
  server.on('close', () => {
    for (const entry of sessions.values()) void entry.session.close();
    sessions.clear();
    void sandbox.dispose();
  });
  return server;
}
