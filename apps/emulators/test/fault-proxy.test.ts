import { createServer, request, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FaultProxy, startFaultProxy } from '../src/index.js';

let upstream: Server;
let proxy: FaultProxy;
let served = 0;

/** One GET through the proxy on a fresh connection: status, Retry-After and body. */
function get(path = '/'): Promise<{ status: number; retryAfter: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: proxy.port, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], body }),
      );
    });
    req.on('error', reject);
    req.setTimeout(5_000, () => req.destroy(new Error('no answer within 5 s')));
    req.end();
  });
}

/** Upgrades a connection to an echo protocol through the proxy; resolves its socket. */
function upgrade(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port: proxy.port,
      path: '/echo',
      agent: false,
      headers: { Connection: 'Upgrade', Upgrade: 'echo' },
    });
    req.on('upgrade', (_res, socket) => resolve(socket));
    req.on('error', reject);
    req.end();
  });
}

const echoOnce = (socket: Socket, text: string) =>
  new Promise<string>((resolve) => {
    socket.once('data', (chunk: Buffer) => resolve(chunk.toString()));
    socket.write(text);
  });

beforeAll(async () => {
  upstream = createServer((_req, res) => {
    served++;
    res.end('from the service');
  });
  upstream.on('upgrade', (_req, socket: Socket) => {
    socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n');
    socket.on('data', (chunk) => socket.write(chunk));
    // The server's sockets are half-open: the echo ends its side when the proxy ends the other.
    socket.on('end', () => socket.end());
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const address = upstream.address();
  proxy = await startFaultProxy(typeof address === 'object' && address ? address.port : 0);
});

afterAll(async () => {
  await proxy?.close();
  upstream?.closeAllConnections();
  await new Promise<void>((resolve) => upstream?.close(() => resolve()));
});

describe('fault proxy: answering for the service', () => {
  it('passes requests through, then answers 500 itself without forwarding, then passes again', async () => {
    proxy.set('pass');
    expect(await get()).toMatchObject({ status: 200, body: 'from the service' });
    const before = { served, answered: proxy.answered };
    proxy.set('http-500');
    const failed = await get();
    expect(failed.status).toBe(500);
    expect(failed.body).toMatch(/fault injected/);
    expect(served).toBe(before.served);
    expect(proxy.answered).toBe(before.answered + 1);
    proxy.set('pass');
    expect((await get()).status).toBe(200);
  });

  it('answers 429 with Retry-After: 1', async () => {
    proxy.set('http-429');
    try {
      const limited = await get();
      expect(limited.status).toBe(429);
      expect(limited.retryAfter).toBe('1');
    } finally {
      proxy.set('pass');
    }
  });

  it('leaves an upgraded connection passing while new requests fail', async () => {
    proxy.set('pass');
    const socket = await upgrade();
    try {
      expect(await echoOnce(socket, 'before')).toBe('before');
      proxy.set('http-500');
      expect(await echoOnce(socket, 'during')).toBe('during');
      expect((await get()).status).toBe(500);
    } finally {
      proxy.set('pass');
      socket.destroy();
    }
  });
});
