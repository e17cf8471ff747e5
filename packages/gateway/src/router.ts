import type { IncomingMessage, ServerResponse } from 'node:http';
import { WsError } from '@ws/core';
import {
  GATEWAY_PROTOCOL_VERSION,
  type GatewayFileOp,
  type GatewayHealth,
  type GatewayMcpCall,
  type GatewayMcpConnect,
} from '@ws/core/gateway';
import type { LocalSandbox } from '@ws/local/sandbox';
import { serveExec } from './exec-route.js';
import { type Confine, receiveFile, runFileOp, sendFile } from './file-routes.js';
import { abortedOnClose, decodeSegment, readJson, sendJson } from './http-io.js';
import type { McpSessions } from './mcp-sessions.js';

/** What the gateway's routes work on. */
export interface GatewayContext {
  /** Reported by `/health`. */
  readonly nonce: string;
  /** Runs commands and file operations. */
  readonly sandbox: LocalSandbox;
  /** The MCP sessions opened through this gateway. */
  readonly sessions: McpSessions;
  /** Resolves a request's path and refuses one outside the allowed roots. */
  readonly confined: Confine;
  /** True when the request carries the gateway's bearer token. */
  readonly authorized: (request: IncomingMessage) => boolean;
}

/**
 * Serves one request: `GET /health` to anyone, the rest (commands, files, MCP sessions) only with the
 * token; a request without it gets 401.
 * @throws WsError `NOT_FOUND` for no route; `INVALID_ARGUMENT` for a malformed URL; what the route
 *   throws. The caller turns it into an error response.
 */
export async function route(
  context: GatewayContext,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
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
      nonce: context.nonce,
      protocol: GATEWAY_PROTOCOL_VERSION,
      pid: process.pid,
      node: process.version,
    };
    sendJson(response, health);
    return;
  }
  if (!context.authorized(request)) {
    response
      .writeHead(401, { 'content-type': 'application/json' })
      .end(JSON.stringify({ error: { code: 'PERMISSION_DENIED', message: 'invalid gateway token' } }));
    return;
  }
  const { sandbox, sessions } = context;
  if (url.pathname === '/exec' && method === 'POST') return serveExec(sandbox, request, response);
  if (url.pathname === '/files') {
    const path = await context.confined(url.searchParams.get('path') ?? '');
    if (method === 'GET') return sendFile(sandbox, path, response);
    if (method === 'PUT') {
      await receiveFile(sandbox, path, url.searchParams.get('mode'), request);
      sendJson(response, null);
      return;
    }
  }
  if (url.pathname === '/files/op' && method === 'POST') {
    sendJson(response, await runFileOp(sandbox, context.confined, await readJson<GatewayFileOp>(request)));
    return;
  }
  if (url.pathname === '/mcp/sessions' && method === 'POST') {
    sendJson(response, await sessions.open(await readJson<GatewayMcpConnect>(request)));
    return;
  }
  if (url.pathname === '/mcp/sessions' && method === 'GET') {
    const agentId = url.searchParams.get('agentId') ?? '';
    const sessionId = url.searchParams.get('sessionId') ?? '';
    sendJson(response, { sessions: sessions.list(agentId, sessionId) });
    return;
  }
  const match = /^\/mcp\/sessions\/([^/]+)(?:\/(tools|call))?$/.exec(url.pathname);
  if (match) {
    const id = decodeSegment(match[1]!);
    const entry = sessions.get(id);
    if (match[2] === 'tools' && method === 'GET') {
      sendJson(response, { tools: await entry.session.listTools() });
      return;
    }
    if (match[2] === 'call' && method === 'POST') {
      const body = await readJson<GatewayMcpCall>(request);
      const signal = abortedOnClose(response);
      sendJson(
        response,
        await entry.session.callTool(body.name, body.input ?? {}, { timeoutMs: body.timeoutMs, signal }),
      );
      return;
    }
    if (match[2] === undefined && method === 'DELETE') {
      await sessions.close(id, entry);
      sendJson(response, null);
      return;
    }
  }
  throw new WsError('NOT_FOUND', `No route for ${method} ${url.pathname}`);
}
