import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

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
 * `server` and drops its open connections (streams included), upgraded ones too (a WebSocket, or one
 * whose upgrade is still being answered), which `closeAllConnections` leaves alone and which would
 * keep the server from closing; every call resolves once it is closed. Make it before any client
 * knows the server's address.
 */
export function serverCloser(server: Server, release: () => void): () => Promise<void> {
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  let closing: Promise<void> | undefined;
  return () => {
    closing ??= new Promise<void>((resolve) => {
      release();
      server.close(() => resolve());
      server.closeAllConnections();
      for (const socket of sockets) socket.destroy();
    });
    return closing;
  };
}
