/** What a subscriber pulls from a queue: an item, an idle period (time for a keepalive), or the end. */
export type QueueItem<T> = { kind: 'item'; item: T } | { kind: 'idle' } | { kind: 'end' };

/**
 * An unbounded single-consumer queue between a producer (a process's output) and one streaming
 * response. It counts the bytes it holds so the producer can pause its source while a client is slow.
 */
export class EventQueue<T> {
  private readonly items: { item: T; size: number }[] = [];
  private wake: (() => void) | undefined;
  private ended = false;
  private failure: { error: unknown } | undefined;
  bytes = 0;

  constructor(private readonly onTaken: () => void = () => {}) {}

  push(item: T, size = 0): void {
    if (this.ended) return;
    this.items.push({ item, size });
    this.bytes += size;
    this.notify();
  }

  /** Ends the queue after what it holds; with an error, the consumer gets it after those items. */
  end(error?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    if (error !== undefined) this.failure = { error };
    this.notify();
  }

  /** Ends the queue and drops what it holds: its consumer has gone. */
  discard(): void {
    this.items.length = 0;
    this.bytes = 0;
    this.end();
  }

  get isEnded(): boolean {
    return this.ended;
  }

  /**
   * The next item; `idle` after `idleMs` without one (0: never). Rejects with `signal.reason` once the
   * signal aborts, and with the queue's error after its last item.
   */
  async next(signal: AbortSignal, idleMs: number): Promise<QueueItem<T>> {
    for (;;) {
      signal.throwIfAborted();
      const first = this.items.shift();
      if (first) {
        this.bytes -= first.size;
        this.onTaken();
        return { kind: 'item', item: first.item };
      }
      if (this.ended) {
        if (this.failure) throw this.failure.error;
        return { kind: 'end' };
      }
      const idle = await new Promise<boolean>((resolve) => {
        const timer = idleMs > 0 ? setTimeout(() => finish(true), idleMs) : undefined;
        const onAbort = () => finish(false);
        const finish = (timedOut: boolean) => {
          if (timer) clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          this.wake = undefined;
          resolve(timedOut);
        };
        this.wake = () => finish(false);
        signal.addEventListener('abort', onAbort, { once: true });
      });
      if (idle) return { kind: 'idle' };
    }
  }

  private notify(): void {
    this.wake?.();
  }
}
