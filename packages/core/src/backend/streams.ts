/**
 * A single-consumer queue of byte chunks that turns push-style output (callbacks) into a pull-style
 * async iterable with back-pressure: `push` resolves only once the queue has room again, so a
 * producer that awaits it never runs more than `highWaterMark` bytes ahead of the consumer.
 */
export class ChunkQueue {
  private readonly chunks: Uint8Array[] = [];
  private buffered = 0;
  private done = false;
  private error: unknown;
  private failed = false;
  private wakeConsumer: (() => void) | undefined;
  private readonly waitingProducers: (() => void)[] = [];

  /** An empty queue. @param highWaterMark Bytes buffered before the producer is asked to wait. */
  constructor(private readonly highWaterMark = 1024 * 1024) {}

  /** Adds a chunk; resolves when the consumer has caught up below the high-water mark. */
  push(chunk: Uint8Array): Promise<void> {
    if (this.done) return Promise.resolve();
    this.chunks.push(chunk);
    this.buffered += chunk.byteLength;
    this.wake();
    if (this.buffered < this.highWaterMark) return Promise.resolve();
    return new Promise((resolve) => this.waitingProducers.push(resolve));
  }

  /** Marks the end of the stream. */
  end(): void {
    this.done = true;
    this.wake();
    this.releaseProducers();
  }

  /** Ends the stream with an error; the consumer sees it after the chunks already queued. */
  fail(error: unknown): void {
    if (this.done) return;
    this.failed = true;
    this.error = error;
    this.end();
  }

  /** The single async iterable over the queue. `onCancel` runs when the consumer stops early. */
  iterate(onCancel: () => void = () => {}): AsyncIterable<Uint8Array> {
    return {
      [Symbol.asyncIterator]: () => ({
        next: async (): Promise<IteratorResult<Uint8Array>> => {
          for (;;) {
            const chunk = this.chunks.shift();
            if (chunk) {
              this.buffered -= chunk.byteLength;
              if (this.buffered < this.highWaterMark) this.releaseProducers();
              return { value: chunk, done: false };
            }
            if (this.done) {
              if (this.failed) {
                this.failed = false;
                throw this.error;
              }
              return { value: undefined, done: true };
            }
            await new Promise<void>((resolve) => {
              this.wakeConsumer = resolve;
            });
          }
        },
        return: async (): Promise<IteratorResult<Uint8Array>> => {
          if (!this.done) {
            this.chunks.length = 0;
            this.buffered = 0;
            this.done = true;
            this.releaseProducers();
            onCancel();
          }
          return { value: undefined, done: true };
        },
      }),
    };
  }

  private wake(): void {
    const wake = this.wakeConsumer;
    this.wakeConsumer = undefined;
    wake?.();
  }

  private releaseProducers(): void {
    for (const release of this.waitingProducers.splice(0)) release();
  }
}

/** Collects an async iterable of chunks into one array. */
export async function collectBytes(source: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  return (await collectAtMost(source, Number.POSITIVE_INFINITY)) as Uint8Array;
}

/**
 * The bytes of `source` in one array, or undefined as soon as more than `maxBytes` came (the source
 * is then given up): never more than `maxBytes` and one chunk are held.
 */
export async function collectAtMost(
  source: AsyncIterable<Uint8Array>,
  maxBytes: number,
): Promise<Uint8Array | undefined> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of source) {
    size += chunk.byteLength;
    if (size > maxBytes) return undefined;
    chunks.push(chunk);
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

/** Keeps the last `limit` bytes pushed into it: a process's log tail, for error messages. */
export class TailBuffer {
  private chunks: Buffer[] = [];
  private size = 0;

  /** An empty buffer. @param limit The bytes kept (the last ones). */
  constructor(private readonly limit = 4_096) {}

  /** Adds bytes, dropping the oldest beyond the limit. */
  push(chunk: Uint8Array): void {
    this.chunks.push(Buffer.from(chunk));
    this.size += chunk.byteLength;
    while (this.chunks.length > 1 && this.size - this.chunks[0]!.length >= this.limit)
      this.size -= this.chunks.shift()!.length;
  }

  /** The kept bytes as text (at most `limit` bytes, from the end). */
  text(): string {
    const all = Buffer.concat(this.chunks);
    return all.subarray(Math.max(0, all.length - this.limit)).toString('utf8');
  }
}
