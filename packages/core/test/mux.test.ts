import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { GatewayConnectionError, MuxEndpoint } from '@ws/core/gateway';
import { describe, expect, it } from 'vitest';

/** Two endpoints wired to each other, delivering each write on a later turn (as a real channel does). */
function pair(options: { window?: number; maxFrameBytes?: number } = {}) {
  const opened: Duplex[] = [];
  const carried = { toServer: 0, toClient: 0 };
  let broken = false;
  const server: MuxEndpoint = new MuxEndpoint({
    ...options,
    send: async (text) => {
      if (broken) throw new Error('the channel broke');
      carried.toClient += text.length;
      setImmediate(() => client.receive(text));
    },
    onOpen: (stream) => opened.push(stream),
  });
  const client: MuxEndpoint = new MuxEndpoint({
    ...options,
    send: async (text) => {
      if (broken) throw new Error('the channel broke');
      carried.toServer += text.length;
      setImmediate(() => server.receive(text));
    },
  });
  const accepted = async () => {
    while (opened.length === 0) await new Promise((resolve) => setImmediate(resolve));
    return opened.shift() as Duplex;
  };
  return { server, client, accepted, carried, breakChannel: () => (broken = true) };
}

async function readAll(stream: Duplex): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const settle = (ms = 20) => new Promise((resolve) => setTimeout(resolve, ms));

describe('MuxEndpoint', () => {
  it('carries every byte value both ways, on several streams at once, each ending on its own', async () => {
    const { client, accepted } = pair({ maxFrameBytes: 1000 });
    const payloads = [randomBytes(10_000), randomBytes(1), Buffer.alloc(0), randomBytes(70_000)];
    const results = await Promise.all(
      payloads.map(async (payload) => {
        const stream = client.open();
        const far = await accepted();
        // As a server does: answer each chunk, end once the other side has ended.
        const echoed = new Promise<void>((resolve) => {
          far.on('data', (chunk: Buffer) => far.write(Buffer.from(chunk).reverse()));
          far.on('end', () => far.end(resolve));
        });
        const reading = readAll(stream);
        stream.end(payload);
        await echoed;
        return reading;
      }),
    );
    // Each chunk comes back reversed; the total and the bytes' multiset survive.
    results.forEach((result, index) => {
      expect(result.length).toBe(payloads[index]?.length);
      expect(
        Buffer.from(result)
          .sort()
          .equals(Buffer.from(payloads[index] as Buffer).sort()),
      ).toBe(true);
    });
    await settle();
    expect(client.size).toBe(0);
  });

  it('holds a sender back at the window while the reader does not read, and lets it go when it does', async () => {
    const window = 64 * 1024;
    const { client, accepted, carried } = pair({ window, maxFrameBytes: 8 * 1024 });
    const stream = client.open();
    const far = await accepted();
    far.end(); // this side only reads
    far.pause();
    let written = 0;
    const total = 2 * 1024 * 1024;
    const writer = (async () => {
      const chunk = randomBytes(16 * 1024);
      while (written < total) {
        if (!stream.write(chunk)) await new Promise((resolve) => stream.once('drain', resolve));
        written += chunk.length;
      }
      stream.end();
    })();
    await settle(200);
    // What crossed the channel: at most the window plus the reader's own buffer (and base64's third).
    const crossedBytes = (carried.toServer * 3) / 4;
    expect(crossedBytes).toBeLessThan(window + 64 * 1024 + 16 * 1024);
    expect(written).toBeLessThan(total);
    const received = await readAll(far.resume());
    await writer;
    expect(received.length).toBe(total);
  });

  it('fails every open stream when the channel closes, saying whether the stream had sent anything', async () => {
    const { client, accepted } = pair();
    const stream = client.open();
    await accepted();
    const failure = new Promise<unknown>((resolve) => stream.once('error', resolve));
    client.close(new Error('the gateway process exited'));
    const error = await failure;
    expect(error).toBeInstanceOf(GatewayConnectionError);
    expect((error as GatewayConnectionError).reached).toBe(true);
    // A stream opened on a closed endpoint never reached anything.
    const late = client.open();
    const lateError = await new Promise<unknown>((resolve) => late.once('error', resolve));
    expect((lateError as GatewayConnectionError).reached).toBe(false);
  });

  it('fails the streams when a write to the channel fails', async () => {
    const { client, accepted, breakChannel } = pair();
    const stream = client.open();
    await accepted();
    breakChannel();
    const failure = new Promise<unknown>((resolve) => stream.once('error', resolve));
    stream.write('lost');
    expect(await failure).toBeInstanceOf(GatewayConnectionError);
    expect(client.closed).toBe(true);
  });

  it('resets the other side of a stream destroyed halfway', async () => {
    const { client, accepted } = pair();
    const stream = client.open();
    const far = await accepted();
    const failure = new Promise<unknown>((resolve) => far.once('error', resolve));
    stream.write('half');
    stream.destroy();
    expect(await failure).toBeInstanceOf(GatewayConnectionError);
  });

  it('passes lines that are no frames to onNoise and keeps going', async () => {
    const noise: string[] = [];
    const endpoint = new MuxEndpoint({ send: async () => {}, onNoise: (line) => noise.push(line) });
    const stream = endpoint.open();
    const reading = readAll(stream);
    endpoint.receive('npm warn something\n1 d 1 aGk=\n');
    endpoint.receive('2 e 1\n');
    expect((await reading).toString()).toBe('hi');
    expect(noise).toEqual(['npm warn something']);
  });

  it('drops lines delivered twice and fails the channel when lines are missing', async () => {
    const endpoint = new MuxEndpoint({ send: async () => {} });
    const stream = endpoint.open();
    const reading = readAll(stream);
    // A reconnected stream overlapping the one it replaces delivers lines 1 and 2 again.
    endpoint.receive('1 d 1 aGk=\n2 d 1 IQ==\n');
    endpoint.receive('1 d 1 aGk=\n2 d 1 IQ==\n3 e 1\n');
    expect((await reading).toString()).toBe('hi!');
    const gapped = endpoint.open();
    const failure = new Promise<unknown>((resolve) => gapped.once('error', resolve));
    endpoint.receive('5 d 2 aGk=\n');
    expect(String(await failure)).toContain('lost lines 4 to 4');
    expect(endpoint.closed).toBe(true);
  });

  it('refuses a line too long to be a frame, failing the channel instead of buffering it', async () => {
    const endpoint = new MuxEndpoint({ send: async () => {} });
    const stream = endpoint.open();
    const failure = new Promise<unknown>((resolve) => stream.once('error', resolve));
    endpoint.receive('1 d 1 '.padEnd(9 * 1024 * 1024, 'A'));
    expect(await failure).toBeInstanceOf(GatewayConnectionError);
    expect(endpoint.closed).toBe(true);
  });
});
