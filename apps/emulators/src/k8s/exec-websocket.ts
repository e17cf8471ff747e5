import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { V1Status } from '@kubernetes/client-node';
import type Docker from 'dockerode';
import { type WebSocket, WebSocketServer } from 'ws';
import { dockerMessage, execExitCode, FrameDemuxer, startExec, streamDone } from '../docker/exec.js';
import { badRequest } from './status.js';
import type { Wire } from './wire.js';

/** Subprotocols served, best first. v5 adds the close-stdin frame; v4 made channel 3 a JSON Status. */
export const EXEC_PROTOCOLS = [
  'v5.channel.k8s.io',
  'v4.channel.k8s.io',
  'v3.channel.k8s.io',
  'v2.channel.k8s.io',
  'channel.k8s.io',
] as const;

const STDIN = 0;
const ERROR = 3;
const CLOSE = 255;
/** Above this many bytes queued on the WebSocket, the exec's output is paused. */
const HIGH_WATER = 1 << 20;
const LOW_WATER = 256 << 10;

export interface ExecRequest {
  argv: string[];
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
  container: string | null;
}

/** The exec parameters of a query (`command` repeated, booleans as `true`/`1`); throws 400. */
export function execRequestOf(query: URLSearchParams): ExecRequest {
  const flag = (name: string) => ['true', '1'].includes((query.get(name) ?? '').toLowerCase());
  const argv = query.getAll('command');
  if (argv.length === 0 || argv[0] === '') throw badRequest('you must specify at least 1 command');
  const request = {
    argv,
    stdin: flag('stdin'),
    stdout: flag('stdout'),
    stderr: flag('stderr'),
    tty: flag('tty'),
    container: query.get('container'),
  };
  if (!request.stdin && !request.stdout && !request.stderr)
    throw badRequest('you must specify at least 1 of stdin, stdout, stderr');
  if (request.tty) throw badRequest('tty is not supported by the emulator');
  return request;
}

/** Picks the best channel protocol the client offers (false: none). */
export function chooseProtocol(offered: Set<string>): string | false {
  return EXEC_PROTOCOLS.find((protocol) => offered.has(protocol)) ?? false;
}

export function execWebSocketServer(): WebSocketServer {
  return new WebSocketServer({ noServer: true, handleProtocols: chooseProtocol, perMessageDeflate: false });
}

/** The channel-3 message of a finished command, for the negotiated protocol. */
export function exitMessage(protocol: string, exitCode: number): string | undefined {
  const failure = `command terminated with non-zero exit code: error executing command [exit code ${exitCode}]`;
  if (protocol === 'v4.channel.k8s.io' || protocol === 'v5.channel.k8s.io') {
    const status: Wire<V1Status> =
      exitCode === 0
        ? { metadata: {}, status: 'Success' }
        : {
            metadata: {},
            status: 'Failure',
            message: failure,
            reason: 'NonZeroExitCode',
            details: { causes: [{ reason: 'ExitCode', message: String(exitCode) }] },
          };
    return JSON.stringify(status);
  }
  // Before v4 the error channel carries only the text of a failure.
  return exitCode === 0 ? undefined : failure;
}

function frame(channel: number, payload: Buffer | string): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload) : payload;
  return Buffer.concat([Buffer.from([channel]), body]);
}

/**
 * Upgrades the request and runs the command in the container: argv as given (no shell), stdin from
 * channel 0, stdout/stderr on 1/2 with back-pressure, the exit Status on 3, then a normal close.
 */
export function upgradeExec(
  server: WebSocketServer,
  request: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  container: Docker.Container,
  exec: ExecRequest,
  log: (line: string) => void,
): void {
  server.handleUpgrade(request, socket, head, (webSocket) => {
    void runExec(webSocket, container, exec, log).catch((error: unknown) => {
      log(`k8s: exec failed: ${dockerMessage(error)}`);
      if (webSocket.readyState === webSocket.OPEN) {
        const message = `error executing command ${JSON.stringify(exec.argv)}: ${dockerMessage(error)}`;
        const body =
          webSocket.protocol === 'v4.channel.k8s.io' || webSocket.protocol === 'v5.channel.k8s.io'
            ? JSON.stringify({
                metadata: {},
                status: 'Failure',
                message,
                reason: 'InternalError',
                code: 500,
              } satisfies Wire<V1Status>)
            : message;
        webSocket.send(frame(ERROR, body), () => webSocket.close(1000));
      }
    });
  });
}

async function runExec(
  webSocket: WebSocket,
  container: Docker.Container,
  request: ExecRequest,
  log: (line: string) => void,
): Promise<void> {
  const protocol = webSocket.protocol;
  // Stdin frames may arrive before the exec is started; they wait here.
  const early: Buffer[] = [];
  let stdinClosed = false;
  let stream: Duplex | undefined;
  webSocket.on('message', (data: Buffer, isBinary: boolean) => {
    const message = isBinary ? data : Buffer.from(data);
    if (message.length === 0) return;
    const channel = message[0];
    if (channel === STDIN && request.stdin && !stdinClosed) {
      const payload = message.subarray(1);
      if (stream) stream.write(payload);
      else early.push(Buffer.from(payload));
    } else if (channel === CLOSE && protocol === 'v5.channel.k8s.io' && message[1] === STDIN) {
      stdinClosed = true;
      stream?.end();
    }
  });
  let socketClosed = false;
  webSocket.once('close', () => {
    socketClosed = true;
    stream?.destroy();
  });
  const started = await startExec(container, request.argv, { stdin: request.stdin });
  stream = started.stream;
  if (socketClosed) {
    stream.destroy();
    return;
  }
  for (const chunk of early.splice(0)) stream.write(chunk);
  if (request.stdin && stdinClosed) stream.end();
  const output = stream;
  const resumeWhenDrained = () => {
    if (output.isPaused() && webSocket.bufferedAmount < LOW_WATER) output.resume();
  };
  const demuxer = new FrameDemuxer((channel, payload) => {
    if ((channel === 1 && !request.stdout) || (channel === 2 && !request.stderr)) return;
    if (webSocket.readyState !== webSocket.OPEN) return;
    webSocket.send(frame(channel, payload), resumeWhenDrained);
    if (webSocket.bufferedAmount > HIGH_WATER) output.pause();
  });
  output.on('data', (chunk: Buffer) => demuxer.push(chunk));
  await streamDone(output);
  output.destroy();
  if (socketClosed) return;
  const exitCode = await execExitCode(started.exec);
  log(`k8s: exec ${JSON.stringify(request.argv)} exited ${exitCode}`);
  const message = exitMessage(protocol, exitCode);
  if (webSocket.readyState !== webSocket.OPEN) return;
  if (message === undefined) webSocket.close(1000);
  else webSocket.send(frame(ERROR, message), () => webSocket.close(1000));
}
