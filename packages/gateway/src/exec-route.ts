import type { IncomingMessage, ServerResponse } from 'node:http';
import { isWsError, WsError } from '@ws/core';
import type { GatewayExecFrame } from '@ws/core/gateway';
import type { LocalSandbox } from '@ws/local/sandbox';
import { abortedOnClose, readExecRequest } from './http-io.js';

/**
 * Serves `POST /exec`: runs the command of the request's JSON header line in `sandbox` and streams its
 * output, then its exit, as NDJSON frames. A connection closed early aborts the command.
 * @throws WsError for a malformed request, before any frame is sent.
 */
export async function serveExec(
  sandbox: LocalSandbox,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const { header, rest } = await readExecRequest(request);
  const signal = abortedOnClose(response);
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
      signal,
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
}
