import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * What the proxy does to traffic:
 * - `pass`: forwards both ways;
 * - `hang`: forwards nothing more, on open connections and new ones, and closes nothing (a proxy or
 *   load balancer that stopped forwarding);
 * - `reset`: resets every open connection and every new one at once;
 * - `http-500`: answers each request that starts from now on `500 Internal Server Error` and closes
 *   its connection (a service failing); an upgraded connection (a WebSocket) keeps passing;
 * - `http-429`: the same with `429 Too Many Requests` and `Retry-After: 1` (a rate limit).
 */
export type FaultMode = 'pass' | 'hang' | 'reset' | 'http-500' | 'http-429';

const CANNED: Partial<Record<FaultMode, string>> = {
  'http-500': [
    'HTTP/1.1 500 Internal Server Error',
    'Content-Type: application/json',
    'Connection: close',
    '',
    '{"code":500,"message":"fault injected: internal server error"}',
  ].join('\r\n'),
  'http-429': [
    'HTTP/1.1 429 Too Many Requests',
    'Content-Type: application/json',
    'Retry-After: 1',
    'Connection: close',
    '',
    '{"code":429,"message":"fault injected: rate limit exceeded"}',
  ].join('\r\n'),
};

/** A TCP proxy on 127.0.0.1 between a vendor SDK and an emulator, whose faults a test switches. */
export interface FaultProxy {
  /** The port the proxy listens on (127.0.0.1). */
  readonly port: number;
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** What the proxy does to traffic now; `pass` at the start. */
  readonly mode: FaultMode;
  /** Switches the mode; `pass` after `hang` lets held bytes through. */
  set(mode: FaultMode): void;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Requests answered by the proxy itself (`http-500`, `http-429`) so far. */
  readonly answered: number;
  /** Sets the port connections go to (for a service started after the proxy, told the proxy's port). */
  target(port: number): void;
  /** Destroys every open connection and stops listening. */
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket;
  /** The service answered `101 Switching Protocols`: no HTTP request starts on it any more. */
  upgraded: boolean;
}

/**
 * Starts a proxy to `127.0.0.1:targetPort` (loopback only, both ends; the port may be set later with
 * `target`, and a connection before then is reset). In `hang` the sockets are paused, so what was
 * sent stays in the kernel's buffers: nothing is lost or closed, nothing arrives.
 */
export async function startFaultProxy(targetPort?: number): Promise<FaultProxy> {
  let port_ = targetPort;
  let mode: FaultMode = 'pass';
  let accepted = 0;
  let answered = 0;
  const pairs = new Set<Pair>();
  const apply = (pair: Pair) => {
    if (mode === 'reset') {
      pair.client.resetAndDestroy();
      pair.upstream.destroy();
    } else if (mode === 'hang') {
      pair.client.pause();
      pair.upstream.pause();
    } else if (mode === 'pass' || CANNED[mode]) {
      pair.client.resume();
      pair.upstream.resume();
    }
  };
  const server: Server = createServer((client) => {
    accepted++;
    if (port_ === undefined) {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect({ host: '127.0.0.1', port: port_ });
    const pair: Pair = { client, upstream, upgraded: false };
    pairs.add(pair);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    // Piped by hand: a paused socket must not be resumed by a pipe's drain.
    const flowing = () => mode === 'pass' || CANNED[mode] !== undefined;
    client.on('data', (chunk) => {
      const canned = pair.upgraded ? undefined : CANNED[mode];
      if (canned !== undefined) {
        // A request that starts while the service "fails": answered here, never forwarded.
        answered++;
        client.removeAllListeners('data');
        upstream
          .removeAllListeners('close')
          .removeAllListeners('error')
          .on('error', () => {});
        upstream.destroy();
        client.end(canned);
        return;
      }
      if (!upstream.write(chunk) && flowing()) client.pause();
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!pair.upgraded && chunk.subarray(0, 12).toString('latin1') === 'HTTP/1.1 101') pair.upgraded = true;
      if (!client.write(chunk) && flowing()) upstream.pause();
    });
    client.on('drain', () => flowing() && upstream.resume());
    upstream.on('drain', () => flowing() && client.resume());
    client.on('end', () => upstream.end());
    upstream.on('end', () => client.end());
    apply(pair);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    get mode() {
      return mode;
    },
    get accepted() {
      return accepted;
    },
    get answered() {
      return answered;
    },
    target(next) {
      port_ = next;
    },
    set(next) {
      mode = next;
      for (const pair of [...pairs]) apply(pair);
    },
    async close() {
      for (const pair of [...pairs]) {
        pair.client.destroy();
        pair.upstream.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A port on 127.0.0.1 that nothing listens on right now, for a service started behind a proxy (it
 * could be taken before the service binds it, which then fails to start and says so).
 */
export async function freeLoopbackPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => resolve());
  });
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  if (typeof address !== 'object' || !address) throw new Error('no loopback port could be found');
  return address.port;
}
