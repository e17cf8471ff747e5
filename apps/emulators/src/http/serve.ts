import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Starts `server` on 127.0.0.1 (`port` 0: a free one) and resolves with its port. Request timeouts are
 * off: uploads and followed command streams can take long; only idle keep-alive sockets time out.
 */
export async function listenOnLoopback(server: Server, port = 0): Promise<number> {
  server.requestTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

/**
 * An idempotent `close()` for an emulator: runs `release` (timers, WebSocket clients) once, then stops
 * `server` and drops its open connections (streams included); every call resolves once it is closed.
 */
export function serverCloser(server: Server, release: () => void): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => {
    closing ??= new Promise<void>((resolve) => {
      release();
      server.close(() => resolve());
      server.closeAllConnections();
    });
    return closing;
  };
}
