import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * What the proxy does to traffic:
 * - `pass`: forwards both ways;
 * - `hang`: forwards nothing more, on open connections and new ones, and closes nothing (a proxy or
 *   load balancer that stopped forwarding);
 * - `reset`: resets every open connection and every new one at once.
 */
export type FaultMode = 'pass' | 'hang' | 'reset';

/** A TCP proxy on 127.0.0.1 between a vendor SDK and an emulator, whose faults a test switches. */
export interface FaultProxy {
  /** The port the proxy listens on (127.0.0.1). */
  readonly port: number;
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly mode: FaultMode;
  /** Switches the mode; `pass` after `hang` lets held bytes through. */
  set(mode: FaultMode): void;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Sets the port connections go to (for a service started after the proxy, told the proxy's port). */
  target(port: number): void;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket;
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
  const pairs = new Set<Pair>();
  const apply = (pair: Pair) => {
    if (mode === 'reset') {
      pair.client.resetAndDestroy();
      pair.upstream.destroy();
    } else if (mode === 'hang') {
      pair.client.pause();
      pair.upstream.pause();
    } else {
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
    const pair = { client, upstream };
    pairs.add(pair);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    // Piped by hand: a paused socket must not be resumed by a pipe's drain.
    client.on('data', (chunk) => {
      if (!upstream.write(chunk) && mode === 'pass') client.pause();
    });
    upstream.on('data', (chunk) => {
      if (!client.write(chunk) && mode === 'pass') upstream.pause();
    });
    client.on('drain', () => mode === 'pass' && upstream.resume());
    upstream.on('drain', () => mode === 'pass' && client.resume());
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
