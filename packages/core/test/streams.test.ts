import { describe, expect, it } from 'vitest';
import { ChunkQueue, collectBytes, createExecResult, OutputCollector } from '../src/backend.js';
import { raceSignal } from '../src/internal/engine-support.js';

const bytes = (...values: number[]) => Uint8Array.from(values);

describe('OutputCollector', () => {
  it('keeps the first bytes up to its limit and counts the rest', () => {
    const collector = new OutputCollector(5);
    collector.push(bytes(1, 2, 3));
    collector.push(bytes(4, 5, 6, 7));
    collector.push(bytes(8));
    expect([...collector.bytes()]).toEqual([1, 2, 3, 4, 5]);
    expect(collector.truncated).toBe(true);
    expect(collector.totalBytes).toBe(8);
  });

  it('is not truncated when everything fits', () => {
    const collector = new OutputCollector(4);
    collector.push(bytes(1, 2, 3, 4));
    expect(collector.truncated).toBe(false);
    expect([...collector.bytes()]).toEqual([1, 2, 3, 4]);
  });
});

describe('createExecResult', () => {
  it('decodes text lazily with replacement characters', () => {
    const result = createExecResult({ exitCode: 0, stdout: bytes(0x68, 0x69, 0xff) });
    expect(result.stdoutText).toBe('hi\ufffd');
    expect(result.stderrText).toBe('');
    expect(result.timedOut).toBe(false);
    expect(result.truncated).toBe(false);
  });
});

describe('ChunkQueue', () => {
  it('delivers chunks in order and ends', async () => {
    const queue = new ChunkQueue();
    void queue.push(bytes(1));
    void queue.push(bytes(2, 3));
    queue.end();
    expect([...(await collectBytes(queue.iterate()))]).toEqual([1, 2, 3]);
  });

  it('holds the producer back above the high-water mark', async () => {
    const queue = new ChunkQueue(4);
    let released = false;
    void queue.push(bytes(1, 2)).then(() => undefined);
    const blocked = queue.push(bytes(3, 4, 5)).then(() => {
      released = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(released).toBe(false);
    const iterator = queue.iterate()[Symbol.asyncIterator]();
    await iterator.next();
    await iterator.next();
    await blocked;
    expect(released).toBe(true);
  });

  it('raises a failure after the queued chunks', async () => {
    const queue = new ChunkQueue();
    void queue.push(bytes(9));
    queue.fail(new Error('broken'));
    const seen: number[] = [];
    await expect(
      (async () => {
        for await (const chunk of queue.iterate()) seen.push(...chunk);
      })(),
    ).rejects.toThrow('broken');
    expect(seen).toEqual([9]);
  });

  it('calls onCancel when the consumer stops early', async () => {
    const queue = new ChunkQueue();
    void queue.push(bytes(1));
    void queue.push(bytes(2));
    let cancelled = false;
    for await (const _ of queue.iterate(() => {
      cancelled = true;
    })) {
      break;
    }
    expect(cancelled).toBe(true);
  });
});

describe('raceSignal', () => {
  it('rejects with ABORTED when the signal fires first', async () => {
    const controller = new AbortController();
    const never = new Promise(() => {});
    const raced = raceSignal(never, controller.signal);
    controller.abort();
    await expect(raced).rejects.toMatchObject({ code: 'ABORTED' });
  });

  it('passes the value through otherwise', async () => {
    await expect(raceSignal(Promise.resolve(7), new AbortController().signal)).resolves.toBe(7);
  });
});
