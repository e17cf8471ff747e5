import { timingSafeEqual } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import { GATEWAY_MUX_PATH, GATEWAY_MUX_UPGRADE, MuxEndpoint } from '@ws/core/gateway';
import { createGatewayServer } from './server.js';

// node gateway.mjs (--socket PATH | --port N [--host 127.0.0.1|::1] [--port-file PATH] |
//                   --stdio [--ping-ms MS]) [--idle-exit-ms MS] --workdir DIR
//                   [--allow ROOT]... [--secrets-stdin] [--nonce N] [--pid-file PATH]
//
// The gateway listens on a unix socket or a loopback port, never on another address; or, with
// --stdio, it serves connections multiplexed over its own stdin and stdout (the host's MuxEndpoint
// framing, after the secrets line) and exits when the host has sent nothing, not even a ping, for
// --idle-exit-ms. It pings the host every --ping-ms (default 10 000), so that the host can tell a
// stalled channel from a quiet one. In that mode nothing but frames goes to stdout; the log goes to
// stderr.
// On a port, a host may also upgrade a connection (`GET /mux`, `Upgrade: ws-gateway-mux`, the
// bearer token) to carry the same frames over it: the way in through a vendor's HTTP reverse proxy.
// There, --idle-exit-ms counts from the last frame heard on any such connection.
// The token comes from the first line of stdin with --secrets-stdin (a JSON object
// `{"token": "...", "nonce": "..."}`; the gateway then exits when stdin closes, so it never outlives
// the host process that started it), or else from the WS_GATEWAY_TOKEN environment variable. Never
// from the command line or a file, which other processes in the sandbox could read or replace.
const { values } = parseArgs({
  options: {
    socket: { type: 'string' },
    host: { type: 'string', default: '127.0.0.1' },
    'pid-file': { type: 'string' },
    'secrets-stdin': { type: 'boolean', default: false },
    nonce: { type: 'string' },
    port: { type: 'string' },
    'port-file': { type: 'string' },
    workdir: { type: 'string', default: process.cwd() },
    allow: { type: 'string', multiple: true },
    stdio: { type: 'boolean', default: false },
    'idle-exit-ms': { type: 'string' },
    'ping-ms': { type: 'string' },
  },
});

function fail(message: string): never {
  process.stderr.write(`gateway: ${message}\n`);
  process.exit(2);
}

/** How often the stdio channel pings the host (`--ping-ms`, default 10 000). */
function pingMs(): number {
  const value = Number(values['ping-ms'] ?? 10_000);
  if (!Number.isFinite(value) || value < 10) fail('--ping-ms must be a number of at least 10');
  return value;
}

/** The first line of stdin (at most 64 KiB) and what came after it in the same read. */
function firstLine(): Promise<{ line: string; rest: string }> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const newline = buffered.indexOf('\n');
      if (newline !== -1) {
        process.stdin.off('data', onData);
        process.stdin.pause();
        resolve({ line: buffered.slice(0, newline), rest: buffered.slice(newline + 1) });
      } else if (buffered.length > 65_536) reject(new Error('the secrets line is too long'));
    };
    process.stdin.on('data', onData);
    process.stdin.once('end', () => reject(new Error('stdin closed before the secrets line')));
  });
}

let token = process.env.WS_GATEWAY_TOKEN ?? '';
let nonce = values.nonce ?? process.env.WS_GATEWAY_NONCE ?? '';
// Frames that arrived with the secrets line (stdio mode).
let early = '';
if (values.stdio && !values['secrets-stdin']) fail('--stdio needs --secrets-stdin');
if (values['secrets-stdin']) {
  try {
    const { line, rest } = await firstLine();
    early = rest;
    const secrets = JSON.parse(line) as { token?: unknown; nonce?: unknown };
    token = typeof secrets.token === 'string' ? secrets.token : '';
    if (typeof secrets.nonce === 'string') nonce = secrets.nonce;
  } catch (error) {
    fail(`reading the secrets from stdin failed: ${(error as Error).message}`);
  }
}
delete process.env.WS_GATEWAY_TOKEN;
delete process.env.WS_GATEWAY_NONCE;
if (token.length < 16)
  fail('the token must hold at least 16 characters (--secrets-stdin or WS_GATEWAY_TOKEN)');
const host = values.host ?? '127.0.0.1';
const loopback = (isIP(host) === 4 && host.startsWith('127.')) || host === '::1';
if (!values.socket && !loopback) fail(`--host must be a loopback address (127.0.0.1 or ::1), not ${host}`);

const server = createGatewayServer({
  token,
  nonce,
  workdir: values.workdir ?? process.cwd(),
  ...(values.allow && values.allow.length > 0 ? { allowedRoots: values.allow } : {}),
});

if (values['pid-file']) writeFileSync(values['pid-file'], String(process.pid));

const shutdown = () => {
  server.close();
  server.closeAllConnections?.();
  if (values.socket) rmSync(values.socket, { force: true });
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
if (values['secrets-stdin']) {
  process.stdin.once('end', shutdown);
  process.stdin.resume();
}

if (values.stdio) {
  const mux = new MuxEndpoint({
    send: (text) =>
      new Promise<void>((resolve, reject) =>
        process.stdout.write(text, (error) => (error ? reject(error) : resolve())),
      ),
    onOpen: (stream) => server.emit('connection', stream),
    onNoise: (line) => process.stderr.write(`gateway: not a frame: ${line.slice(0, 200)}\n`),
    // The host takes a channel it hears nothing from for a while as stalled.
    pingMs: pingMs(),
  });
  process.stdout.on('error', shutdown);
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (text: string) => mux.receive(text));
  if (early) mux.receive(early);
  const idleMs = Number(values['idle-exit-ms'] ?? 45_000);
  if (!Number.isFinite(idleMs) || idleMs < 1_000) fail('--idle-exit-ms must be a number of at least 1000');
  setInterval(() => {
    if (Date.now() - mux.lastReceived > idleMs) {
      process.stderr.write(`gateway: nothing from the host for ${idleMs} ms, exiting\n`);
      shutdown();
    }
  }, 1_000).unref();
  process.stderr.write('gateway: serving on stdio\n');
} else if (values.socket) {
  rmSync(values.socket, { force: true });
  // Only the owner may connect (the socket is created under this umask, so there is no window).
  process.umask(0o177);
  server.listen(values.socket, () => {
    process.umask(0o022);
    process.stderr.write(`gateway: serving on ${values.socket}\n`);
  });
} else {
  // Connections upgraded to multiplexed streams (see GATEWAY_MUX_UPGRADE), and when one last spoke.
  const muxes = new Set<MuxEndpoint>();
  let lastHeard = Date.now();
  const expected = Buffer.from(`Bearer ${token}`);
  server.on('upgrade', (request, socket: Socket, head: Buffer) => {
    const given = Buffer.from(request.headers.authorization ?? '');
    const wanted =
      request.method === 'GET' &&
      new URL(request.url ?? '/', 'http://gateway').pathname === GATEWAY_MUX_PATH &&
      String(request.headers.upgrade ?? '').toLowerCase() === GATEWAY_MUX_UPGRADE;
    if (!wanted || given.length !== expected.length || !timingSafeEqual(given, expected)) {
      socket.end(
        `HTTP/1.1 ${wanted ? '401 Unauthorized' : '400 Bad Request'}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`,
      );
      return;
    }
    socket.setNoDelay(true);
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${GATEWAY_MUX_UPGRADE}\r\n\r\n`,
    );
    const mux = new MuxEndpoint({
      send: (text) =>
        new Promise<void>((resolve, reject) =>
          socket.write(text, (error) => (error ? reject(error) : resolve())),
        ),
      onOpen: (stream) => server.emit('connection', stream),
      onNoise: (line) => process.stderr.write(`gateway: not a frame: ${line.slice(0, 200)}\n`),
      // The host takes a channel it hears nothing from for a while as stalled.
      pingMs: pingMs(),
    });
    muxes.add(mux);
    // Not setEncoding: an HTTP server's socket refuses it; frames are ASCII, split anywhere.
    const decoder = new TextDecoder();
    socket.on('data', (chunk: Buffer) => {
      lastHeard = Date.now();
      mux.receive(decoder.decode(chunk, { stream: true }));
    });
    if (head.length > 0) mux.receive(head.toString('utf8'));
    const drop = () => {
      muxes.delete(mux);
      mux.close(new Error('the upgraded connection closed'));
    };
    socket.on('close', drop);
    socket.on('error', drop);
  });
  if (values['idle-exit-ms'] !== undefined) {
    const idleMs = Number(values['idle-exit-ms']);
    if (!Number.isFinite(idleMs) || idleMs < 1_000) fail('--idle-exit-ms must be a number of at least 1000');
    setInterval(() => {
      for (const mux of muxes) lastHeard = Math.max(lastHeard, mux.lastReceived);
      if (Date.now() - lastHeard > idleMs) {
        process.stderr.write(`gateway: nothing from the host for ${idleMs} ms, exiting\n`);
        shutdown();
      }
    }, 1_000).unref();
  }
  server.listen(Number(values.port ?? 0), host, () => {
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    if (values['port-file']) writeFileSync(values['port-file'], String(port));
    process.stderr.write(`gateway: serving on ${host}:${port}\n`);
  });
}
