/**
 * Work the emulator accepted (answered 2xx) and finishes in the background: a Pod's container being
 * stopped and removed, a deleted claim's volume, a namespace being drained. `close()` waits for it,
 * as a real cluster finishes a deletion its API server accepted.
 */
export class Completions {
  private readonly pending = new Set<Promise<unknown>>();

  /** Tracks `work` until it settles; returns it. */
  track<T>(work: Promise<T>): Promise<T> {
    const settled = work.then(
      () => {},
      () => {},
    );
    this.pending.add(settled);
    void settled.then(() => this.pending.delete(settled));
    return work;
  }

  /** Resolves once nothing is pending (work tracked meanwhile included), or after `timeoutMs`. */
  async settle(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.pending.size > 0) {
      const left = deadline - Date.now();
      if (left <= 0) return;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(this.pending),
        new Promise((resolve) => {
          timer = setTimeout(resolve, left);
        }),
      ]);
      clearTimeout(timer);
    }
  }
}
