import type Docker from 'dockerode';

/** The longest delay one timer waits; a later due time is reached by arming again. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** One sandbox of a registry: its record, its one timer, and the queue of its lifecycle changes. */
export interface RegistryEntry<Record> {
  record: Record;
  timer: NodeJS.Timeout | undefined;
  /** Serialises lifecycle changes of one sandbox. */
  lock: Promise<unknown>;
}

/**
 * What the sandbox registries of the emulators share: their sandboxes by id, each with one timer (its
 * end, or its next automatic change) and a queue of lifecycle changes, and the containers an earlier
 * emulator of the same instance left behind.
 */
export abstract class ContainerRegistry<Record> {
  protected readonly entries = new Map<string, RegistryEntry<Record>>();
  protected closed = false;

  list(): Record[] {
    return [...this.entries.values()].map((entry) => entry.record);
  }

  /** Stops the timers; the containers stay. */
  close(): void {
    this.closed = true;
    for (const entry of this.entries.values()) this.disarm(entry);
  }

  /** Adds `record` under `id`, with no timer and nothing queued. */
  protected register(id: string, record: Record): RegistryEntry<Record> {
    const entry: RegistryEntry<Record> = { record, timer: undefined, lock: Promise.resolve() };
    this.entries.set(id, entry);
    return entry;
  }

  /** Runs `action` once the changes queued before it on `entry` are done; a failed one holds up none. */
  protected queue<T>(entry: RegistryEntry<Record>, action: () => T | PromiseLike<T>): Promise<T> {
    const run = entry.lock.then(action);
    entry.lock = run.catch(() => {});
    return run;
  }

  protected disarm(entry: RegistryEntry<Record>): void {
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = undefined;
  }

  /**
   * Arms `entry`'s timer (the one before is cleared) to call `due` at `at` (ms since the epoch), or
   * `early` when it fires before that (a due time beyond what one timer waits). The timer keeps no
   * process alive.
   */
  protected arm(entry: RegistryEntry<Record>, at: number, due: () => void, early: () => void): void {
    this.disarm(entry);
    entry.timer = setTimeout(
      () => {
        entry.timer = undefined;
        if (Date.now() < at) early();
        else due();
      },
      Math.min(Math.max(0, at - Date.now()), MAX_TIMER_MS),
    );
    entry.timer.unref();
  }

  /** The containers `filters` selects, stopped ones included, less those on their way out. */
  protected async leftContainers(
    docker: Docker,
    filters: { [key: string]: string[] },
  ): Promise<Docker.ContainerInfo[]> {
    const containers = await docker.listContainers({ all: true, filters });
    return containers.filter((summary) => summary.State !== 'removing' && summary.State !== 'dead');
  }
}
