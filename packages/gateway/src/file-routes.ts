import type { IncomingMessage, ServerResponse } from 'node:http';
import { WsError } from '@ws/core';
import type { GatewayFileOp } from '@ws/core/gateway';
import type { LocalSandbox } from '@ws/local/sandbox';
import { wholeBody } from './http-io.js';

/** Resolves a request's path and refuses one outside what the gateway may touch. */
export type Confine = (path: string) => Promise<string>;

/** Serves `GET /files`: streams the file at `path` (already confined) as the response body. */
export async function sendFile(sandbox: LocalSandbox, path: string, response: ServerResponse): Promise<void> {
  const stream = await sandbox.readStream(path);
  response.writeHead(200, { 'content-type': 'application/octet-stream' });
  for await (const chunk of stream) {
    if (!response.write(chunk)) await new Promise((resolve) => response.once('drain', resolve));
  }
  response.end();
}

/**
 * Serves `PUT /files`: writes the request's body to `path` (already confined), with `mode` (octal
 * digits) when given. A body cut off before its end writes nothing.
 */
export async function receiveFile(
  sandbox: LocalSandbox,
  path: string,
  mode: string | null,
  request: IncomingMessage,
): Promise<void> {
  await sandbox.writeStream(path, wholeBody(request), mode ? { mode: Number.parseInt(mode, 8) } : {});
}

/**
 * Runs one file operation of `POST /files/op` on `sandbox`, its paths confined; returns what to send.
 * @throws WsError `INVALID_ARGUMENT` for an unknown operation; what confining or the sandbox throws.
 */
export async function runFileOp(
  sandbox: LocalSandbox,
  confined: Confine,
  op: GatewayFileOp,
): Promise<unknown> {
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
}
