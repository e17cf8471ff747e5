import type { Workspace } from '../contracts/workspace.js';
import type { ManagerEvents } from './events.js';
import type { Entry } from './manager-entry.js';

/** True when nothing keeps `entry` open: it is open, with no lease, no waiting caller and no call in flight. */
export function evictable<W extends Workspace>(entry: Entry<W>): boolean {
  return entry.state === 'open' && entry.leases === 0 && entry.waiters === 0 && entry.activity.inFlight === 0;
}

/** What {@link Eviction} works on: the manager's entries, its events, and how it closes an entry. */
export interface EvictionTarget<W extends Workspace> {
  /** The manager's entries by workspace id; an entry no longer in it is never evicted. */
  readonly entries: ReadonlyMap<string, Entry<W>>;
  /** Where `evict` events go. */
  readonly events: ManagerEvents<W>;
  /** Removes an entry and closes its workspace, reporting a failure as an `error` event. */
  close(entry: Entry<W>): Promise<unknown>;
}

/** Timing of {@link Eviction}, in ms. */
export interface EvictionSettings {
  /** How long an evictable workspace stays open unused; `Infinity` turns the sweeper off. */
  readonly idleTtlMs: number;
  /** How often the sweeper runs (finite, positive). */
  readonly sweepIntervalMs: number;
}

/**
 * Closes the workspaces nobody needs: those idle past the TTL, periodically (an unref'd timer) or on
 * demand, and the least recently used ones when callers wait for a slot. Never one with a lease held,
 * a caller waiting or a call in flight.
 */
export class Eviction<W extends Workspace> {
  private sweeper: ReturnType<typeof setInterval> | undefined;

  /** Does no I/O and starts no timer. */
  constructor(
    private readonly settings: EvictionSettings,
    private readonly target: EvictionTarget<W>,
  ) {}

  /**
   * Closes the workspaces idle past the TTL now; returns their ids once closed. Close failures are
   * reported as `error` events.
   */
  async sweep(): Promise<string[]> {
    const now = performance.now();
    const idle = [...this.target.entries.values()].filter(
      (entry) => evictable(entry) && now - entry.activity.lastUsed >= this.settings.idleTtlMs,
    );
    await Promise.all(idle.map((entry) => this.evict(entry, 'idle', now)));
    return idle.map((entry) => entry.id);
  }

  /** Starts closing up to `needed` evictable workspaces, least recently used first; does not wait. */
  makeRoom(needed: number): void {
    const now = performance.now();
    const candidates = [...this.target.entries.values()]
      .filter((entry) => evictable(entry))
      .sort((a, b) => a.activity.lastUsed - b.activity.lastUsed);
    for (const entry of candidates) {
      if (needed-- <= 0) break;
      void this.evict(entry, 'capacity', now);
    }
  }

  /** Starts the periodic sweep, unless running or the TTL is infinite. Idempotent. */
  start(): void {
    if (this.sweeper || !Number.isFinite(this.settings.idleTtlMs)) return;
    this.sweeper = setInterval(() => void this.sweep(), this.settings.sweepIntervalMs);
    this.sweeper.unref?.();
  }

  /** Stops the periodic sweep. Idempotent. */
  stop(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  private async evict(entry: Entry<W>, reason: 'idle' | 'capacity', now: number): Promise<void> {
    if (this.target.entries.get(entry.id) !== entry || !evictable(entry)) return;
    this.target.events.emit('evict', {
      workspaceId: entry.id,
      reason,
      idleMs: now - entry.activity.lastUsed,
    });
    await this.target.close(entry);
  }
}
