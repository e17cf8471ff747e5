import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { Duplex } from 'node:stream';
import { FrameDemuxer, startExec } from '../docker/exec.js';
import { OpenSandboxHttpError } from './errors.js';
import type { SandboxRecord } from './sandbox-registry.js';

// Connects to 127.0.0.1:$1 inside the sandbox and copies bytes both ways; says "connected" on stderr
// once the connection is made (exit 3 when it cannot be). It runs in a session of its own (setsid),
// so `kill 0` ends exactly the relay: when either side stops, the other is stopped too.
const RELAY = `{ exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || exit 3
echo connected >&2
{ cat <&3; kill -KILL 0; } &
cat >&3
kill -KILL 0`;

/** The part of an execd path that names a proxied port: `/proxy/<port>/<rest>`. */
export function proxyTarget(path: string): { port: number; rest: string } | undefined {
  const match = /^\/proxy\/(\d{1,5})(\/.*)?$/.exec(path);
  if (!match) return undefined;
  const port = Number(match[1]);
  if (port < 1 || port > 65_535) return undefined;
  return { port, rest: match[2] ?? '/' };
}

/**
 * One connection to a port inside the sandbox's container, as a stream: a relay command run with
 * `docker exec` (the emulator reaches no container address). Rejects with a 502 when nothing listens.
 */
async function connect(record: SandboxRecord, port: number): Promise<Duplex> {
  const { stream } = await startExec(
    record.container,
    ['setsid', '-w', 'bash', '-c', RELAY, 'relay', String(port)],
    {
      stdin: true,
    },
  );
  let stderr = '';
  let settle: { resolve(): void; reject(error: Error): void } | undefined;
  const connected = new Promise<void>((resolve, reject) => {
    settle = { resolve, reject };
  });
  const relay = new Duplex({
    write(chunk: Buffer, _encoding, callback) {
      stream.write(chunk, callback);
    },
    final(callback) {
      stream.end();
      callback();
    },
    read() {
      stream.resume();
    },
    destroy(error, callback) {
      // Ending its input stops the relay inside (see RELAY); the connection then closes there.
      stream.end();
      stream.destroy();
      callback(error);
    },
  });
  const demuxer = new FrameDemuxer((channel, payload) => {
    if (channel === 1) {
      if (!relay.push(payload)) stream.pause();
      return;
    }
    stderr += payload.toString('utf8');
    if (stderr.includes('connected\n')) settle?.resolve();
  });
  stream.on('data', (chunk: Buffer) => demuxer.push(chunk));
  stream.on('end', () => {
    settle?.reject(
      new OpenSandboxHttpError(502, 'BAD_GATEWAY', `nothing listens on port ${port} in the sandbox`),
    );
    relay.push(null);
  });
  stream.on('error', (error) => relay.destroy(error));
  await connected;
  settle = undefined;
  return relay;
}

// Headers that belong to one hop, which a proxy does not pass on.
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
]);

/** execd's reverse proxy for a plain request: `/proxy/<port>/<rest>` to `http://127.0.0.1:<port>/<rest>` inside. */
export async function proxyRequest(
  record: SandboxRecord,
  request: IncomingMessage,
  response: ServerResponse,
  target: { port: number; rest: string },
  search: string,
): Promise<void> {
  const relay = await connect(record, target.port);
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(request.headers))
    if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
  await new Promise<void>((resolve) => {
    const upstream = httpRequest({
      method: request.method,
      path: `${target.rest}${search}`,
      headers: { ...headers, host: `127.0.0.1:${target.port}`, connection: 'close' },
      createConnection: () => relay,
    });
    upstream.on('response', (answer) => {
      const passed: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(answer.headers))
        if (value !== undefined && !HOP_BY_HOP.has(name)) passed[name] = value;
      response.writeHead(answer.statusCode ?? 502, passed);
      // Each chunk as it comes: a streamed answer is not held back.
      answer.on('data', (chunk: Buffer) => response.write(chunk));
      answer.on('end', () => {
        response.end();
        resolve();
      });
      answer.on('error', () => {
        response.destroy();
        resolve();
      });
    });
    upstream.on('error', (error) => {
      if (!response.headersSent)
        response
          .writeHead(502, { 'content-type': 'application/json' })
          .end(JSON.stringify({ code: 'BAD_GATEWAY', message: error.message }));
      else response.destroy();
      resolve();
    });
    response.on('close', () => upstream.destroy());
    request.pipe(upstream);
  });
}

/**
 * execd's reverse proxy for an upgrade (any protocol, as Go's reverse proxy passes it): the request
 * goes through as it came, and the connection then carries bytes both ways until either side ends.
 */
export async function proxyUpgrade(
  record: SandboxRecord,
  request: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  target: { port: number; rest: string },
  search: string,
): Promise<void> {
  const relay = await connect(record, target.port);
  const lines = [`${request.method} ${target.rest}${search} HTTP/1.1`];
  for (let index = 0; index < request.rawHeaders.length; index += 2) {
    const name = request.rawHeaders[index] ?? '';
    const value = request.rawHeaders[index + 1] ?? '';
    lines.push(name.toLowerCase() === 'host' ? `Host: 127.0.0.1:${target.port}` : `${name}: ${value}`);
  }
  relay.write(`${lines.join('\r\n')}\r\n\r\n`);
  if (head.length > 0) relay.write(head);
  socket.pipe(relay);
  relay.pipe(socket);
  const end = () => {
    relay.destroy();
    socket.destroy();
  };
  socket.on('close', end);
  socket.on('error', end);
  relay.on('close', end);
  relay.on('error', end);
}
