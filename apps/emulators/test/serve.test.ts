import { once } from 'node:events';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { listenOnLoopback, serverCloser } from '../src/http/serve.js';

/** `promise`'s outcome, or `'still waiting'` after `ms`. */
const within = <T>(promise: Promise<T>, ms: number): Promise<T | 'still waiting'> =>
  Promise.race([
    promise,
    new Promise<'still waiting'>((resolve) => setTimeout(() => resolve('still waiting'), ms)),
  ]);

describe("an emulator's close", () => {
  it('drops a connection whose upgrade is never answered, and one kept open, instead of waiting for them', async () => {
    const server = createServer((_request, response) => {
      // A followed stream: answered, never ended.
      response.writeHead(200);
      response.write('streaming\n');
    });
    const upgrading = new Promise<void>((resolve) => server.on('upgrade', () => resolve()));
    const close = serverCloser(server, () => {});
    const port = await listenOnLoopback(server);

    const upgrade = connect(port, '127.0.0.1');
    upgrade.write('GET /exec HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
    const stream = connect(port, '127.0.0.1');
    stream.write('GET /follow HTTP/1.1\r\nHost: x\r\n\r\n');
    await upgrading;
    await once(stream, 'data');
    const upgradeClosed = once(upgrade, 'close');
    const streamClosed = once(stream, 'close');

    expect(
      await within(
        close().then(() => 'closed'),
        5_000,
      ),
    ).toBe('closed');
    await upgradeClosed;
    await streamClosed;
    // Again: the same answer at once.
    expect(
      await within(
        close().then(() => 'closed'),
        1_000,
      ),
    ).toBe('closed');
  });
});
