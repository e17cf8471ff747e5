import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { followCommandLogs, LogDemuxer } from '../src/log-stream.js';

// The SDK's own demultiplexer, the behaviour LogDemuxer must keep.
const require = createRequire(import.meta.url);
const sdkStream = require(join(dirname(require.resolve('@daytonaio/sdk')), 'utils', 'Stream.js')) as {
  stdDemuxStream(
    ws: EventEmitter,
    onStdout: (text: string) => void,
    onStderr: (text: string) => void,
  ): Promise<void>;
};

function ours(messages: Buffer[]): { stdout: string; stderr: string } {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const demuxer = new LogDemuxer({
    onStdout: (bytes) => out.push(Buffer.from(bytes)),
    onStderr: (bytes) => err.push(Buffer.from(bytes)),
  });
  for (const message of messages) demuxer.push(message);
  demuxer.end();
  return { stdout: Buffer.concat(out).toString('latin1'), stderr: Buffer.concat(err).toString('latin1') };
}

async function theSdks(messages: Buffer[]): Promise<{ stdout: string; stderr: string }> {
  const socket = new EventEmitter();
  let stdout = '';
  let stderr = '';
  const done = sdkStream.stdDemuxStream(
    socket,
    (text) => {
      stdout += text;
    },
    (text) => {
      stderr += text;
    },
  );
  for (const message of messages) socket.emit('message', message);
  socket.emit('close');
  await done;
  return { stdout, stderr };
}

const bytes = (...parts: (string | number[])[]) =>
  Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part) : Buffer.from(part))));

describe('LogDemuxer', () => {
  it('splits the two streams at their markers and drops what comes before the first', () => {
    expect(ours([bytes('lost', [1, 1, 1], 'out ', [2, 2, 2], 'err', [1, 1, 1], 'more')])).toEqual({
      stdout: 'out more',
      stderr: 'err',
    });
  });

  it('finds a marker cut between two messages, at either byte', () => {
    expect(ours([bytes([1, 1, 1], 'a', [2]), bytes([2, 2], 'b')])).toEqual({ stdout: 'a', stderr: 'b' });
    expect(ours([bytes([1, 1, 1], 'a', [2, 2]), bytes([2], 'b')])).toEqual({ stdout: 'a', stderr: 'b' });
    expect(ours([bytes([1]), bytes([1]), bytes([1], 'x')])).toEqual({ stdout: 'x', stderr: '' });
  });

  it('keeps marker bytes that turn out not to be a marker, the last ones too', () => {
    expect(ours([bytes([1, 1, 1], 'a', [2, 2]), bytes('b', [1])])).toEqual({
      stdout: `a\u0002\u0002b\u0001`,
      stderr: '',
    });
  });

  // Random seeded logs over an alphabet where markers and near-markers are common.
  let seed = 20261202;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const text = (length: number, alphabet = [1, 2, 0x61, 0x62, 0x0a]) =>
    Buffer.from(Array.from({ length }, () => alphabet[random(alphabet.length)]!));

  it('gives the same streams as the SDK’s demultiplexer on messages framed as the toolbox frames them', async () => {
    // Each message is a marker and a chunk of output. (Where output holds the marker bytes 1 and 2,
    // the SDK's may mistake their place: it searches only the message less its last two bytes.)
    for (let round = 0; round < 300; round++) {
      const messages = Array.from({ length: 1 + random(30) }, () =>
        Buffer.concat([
          Buffer.from(random(2) ? [1, 1, 1] : [2, 2, 2]),
          text(1 + random(40), [0x61, 0x62, 0x0a]),
        ]),
      );
      const log = Buffer.concat(messages).toString('hex');
      expect(ours(messages), `log ${log}`).toEqual(await theSdks(messages));
    }
  });

  it('gives the same streams wherever the log is cut into messages', () => {
    // Output holding marker bytes, cut anywhere, marker bytes split between messages.
    for (let round = 0; round < 300; round++) {
      const log = text(1 + random(400));
      const messages: Buffer[] = [];
      for (let at = 0; at < log.length; ) {
        const size = 1 + random(24);
        messages.push(log.subarray(at, at + size));
        at += size;
      }
      expect(ours(messages), `log ${log.toString('hex')}`).toEqual(ours([log]));
    }
  });

  it('delivers every byte of a large log in large messages, as views of them', () => {
    // 64 MiB in 64 KiB messages (the SDK's array-copying demultiplexer takes about 30 s for this).
    const payload = Buffer.alloc(64 * 1024, 0x61);
    const message = Buffer.concat([Buffer.from([1, 1, 1]), payload]);
    let received = 0;
    const demuxer = new LogDemuxer({
      onStdout: (chunk) => (received += chunk.byteLength),
      onStderr: () => {},
    });
    for (let i = 0; i < 1024; i++) demuxer.push(message);
    demuxer.end();
    expect(received).toBe(64 * 1024 * 1024);
  });

  it('falls back to the SDK’s own follower when the SDK keeps no configuration where it is read', async () => {
    const calls: unknown[][] = [];
    const process = {
      getSessionCommandLogs: async (...args: unknown[]) => {
        calls.push(args.slice(0, 2));
        (args[2] as (text: string) => void)('out é');
        (args[3] as (text: string) => void)('err');
      },
    };
    const out: Uint8Array[] = [];
    const err: Uint8Array[] = [];
    await followCommandLogs({ process } as never, 'session', 'command', {
      onStdout: (bytes) => out.push(bytes),
      onStderr: (bytes) => err.push(bytes),
    });
    expect(calls).toEqual([['session', 'command']]);
    expect(Buffer.concat(out).toString()).toBe('out é');
    expect(Buffer.concat(err).toString()).toBe('err');
  });
});
