import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocketServer } from 'ws';
import { sendJson } from '../http/http-util.js';
import { EMULATED_DAEMON_VERSION } from './control-plane.js';
import { DaytonaHttpError, UnimplementedRequest } from './errors.js';
import type { SandboxRecord, SandboxRegistry } from './sandbox-registry.js';
import type { LogEvent } from './sessions.js';
import { handleFilesRoute } from './toolbox-files.js';
import { executeCommand, handleSessionRoute, type ToolboxResult } from './toolbox-process.js';

/** The started sandbox a toolbox request is for (activity for its auto-stop clock). */
function startedSandbox(registry: SandboxRegistry, sandboxId: string): SandboxRecord {
  const record = registry.get(sandboxId);
  if (!record || record.id !== sandboxId)
    throw new DaytonaHttpError(404, `Sandbox with ID ${sandboxId} not found`, 'NOT_FOUND');
  if (record.state !== 'started')
    throw new DaytonaHttpError(
      400,
      `Sandbox ${sandboxId} is not started (state: ${record.state})`,
      'BAD_REQUEST',
    );
  registry.touch(record);
  return record;
}

/** Serves one toolbox request; `path` is the part after `/toolbox/<sandboxId>`. */
export async function handleToolbox(
  registry: SandboxRegistry,
  request: IncomingMessage,
  response: ServerResponse,
  sandboxId: string,
  path: string,
): Promise<void> {
  const record = startedSandbox(registry, sandboxId);
  const release = registry.busy(record);
  try {
    await serveToolbox(record, request, response, path);
  } finally {
    release();
  }
}

async function serveToolbox(
  record: SandboxRecord,
  request: IncomingMessage,
  response: ServerResponse,
  path: string,
): Promise<void> {
  const url = new URL(request.url ?? '/', 'http://emulator');
  let result: ToolboxResult | 'unmatched' | 'sent' = 'unmatched';
  if (path === '/process/execute' && request.method === 'POST')
    result = await executeCommand(record, request);
  else if (path === '/process/session' || path.startsWith('/process/session/'))
    result = await handleSessionRoute(record, request, path);
  else if (path === '/files' || path.startsWith('/files/'))
    result = await handleFilesRoute(record, request, response, path, url);
  else if (request.method === 'GET' && (path === '/user-home-dir' || path === '/work-dir'))
    result = { body: { dir: record.account.home } };
  else if (request.method === 'GET' && path === '/version')
    result = { body: { version: EMULATED_DAEMON_VERSION } };
  if (result === 'sent') return;
  request.resume();
  if (result === 'unmatched')
    throw new UnimplementedRequest(
      404,
      `${request.method} ${path} is not part of the emulated toolbox`,
      'NOT_FOUND',
    );
  const status = result?.status ?? 200;
  if (result?.body === undefined) {
    // 204 has no body, nor a length.
    response.writeHead(status, status === 204 ? {} : { 'content-length': '0' });
    response.end();
    return;
  }
  sendJson(response, status, result.body);
}

const STDOUT_PREFIX = Buffer.from([1, 1, 1]);
const STDERR_PREFIX = Buffer.from([2, 2, 2]);
const LOGS_PATH = /^\/process\/session\/([^/]+)\/command\/([^/]+)\/logs$/;

function frame(event: { stream: 'stdout' | 'stderr'; data: Buffer }): Buffer {
  return Buffer.concat([event.stream === 'stdout' ? STDOUT_PREFIX : STDERR_PREFIX, event.data]);
}

/**
 * Upgrades `…/command/{id}/logs?follow=true` to a WebSocket that carries the command's output so far and
 * then as it comes, each chunk after its stream marker (`\x01\x01\x01` stdout, `\x02\x02\x02` stderr),
 * and closes when the command ends. Throws a `DaytonaHttpError` when it cannot.
 */
export function upgradeLogs(
  registry: SandboxRegistry,
  webSockets: WebSocketServer,
  request: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  sandboxId: string,
  path: string,
): void {
  const match = LOGS_PATH.exec(path);
  if (!match) throw new UnimplementedRequest(404, `${path} has no WebSocket`, 'NOT_FOUND');
  let sessionId: string;
  let commandId: string;
  try {
    sessionId = decodeURIComponent(match[1]!);
    commandId = decodeURIComponent(match[2]!);
  } catch {
    throw new DaytonaHttpError(400, 'malformed path parameter');
  }
  const record = startedSandbox(registry, sandboxId);
  const command = record.sessions.get(sessionId).commands.get(commandId);
  if (!command) throw new DaytonaHttpError(404, `command ${commandId} not found`, 'PROCESS_NOT_FOUND');
  webSockets.handleUpgrade(request, socket, head, (webSocket) => {
    for (const chunk of command.chunks) webSocket.send(frame(chunk));
    const unsubscribe = command.subscribe((event: LogEvent) => {
      if (event.stream === 'end') webSocket.close(1000, 'command finished');
      else webSocket.send(frame(event));
    });
    webSocket.on('close', unsubscribe);
    webSocket.on('error', unsubscribe);
  });
}
