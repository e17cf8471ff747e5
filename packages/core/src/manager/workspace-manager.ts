import { abortError, isWsError, throwIfAborted, WsError } from '../contracts/errors.js';
import type { CallOptions, Workspace } from '../contracts/workspace.js';
import { Activity, countedWorkspace } from './activity.js';
import {
  ManagerEvents,
  type WorkspaceCloseReason,
  type WorkspaceManagerEvents,
  type WorkspaceManagerListener,
} from './events.js';
import {
  assignWorkspaceId,
  checkIsolation,
  type IsolationPolicy,
  type WorkspaceRequest,
} from './isolation.js';

/** What a {@link WorkspaceFactory} is given besides the id. */
export interface WorkspaceFactoryContext {
  /** Fires when the manager gives up on this creation (it is being disposed). */
  readonly signal: AbortSignal;
}

/**
 * Builds the workspace of one id, on any backend:
 * `(workspaceId) => new DockerWorkspace({ workspaceId, owner: 'my-service' })`. The manager calls
 * `initialize()` on it (an already initialized one is fine). The workspace's `id` must be `workspaceId`.
 */
export type WorkspaceFactory<W extends Workspace> = (
  workspaceId: string,
  context: WorkspaceFactoryContext,
) => W | Promise<W>;

/** Options of {@link WorkspaceManager}. */
export interface WorkspaceManagerOptions<W extends Workspace> {
  /** Builds the workspace of an id. */
  factory: WorkspaceFactory<W>;
  /** How a request without a `workspaceId` is mapped to one. Default: `per_agent`. */
  isolation?: IsolationPolicy;
  /**
   * The most workspaces open at once (those being created and those closing count too). Callers
   * beyond it wait, first come first served. Default: `Infinity`.
   */
  maxOpen?: number;
  /**
   * How long a caller waits, for a free slot and then for the workspace to be created, before failing
   * with `TIMEOUT`, in ms. Default: 60 000.
   */
  acquireTimeoutMs?: number;
  /**
   * A workspace nobody holds a lease on and with no call in flight is closed once unused this long,
   * in ms. `Infinity` keeps workspaces until closed. Default: 3 600 000 (one hour).
   */
  idleTtlMs?: number;
  /** How often the sweeper looks for idle workspaces, in ms. Default: the TTL, at most 300 000. */
  sweepIntervalMs?: number;
  /**
   * When callers wait for a slot, close the least recently used workspace that nobody holds and that
   * has no call in flight, rather than wait for the sweeper. Default: true.
   */
  evictIdleWhenFull?: boolean;
}

/** Options of {@link WorkspaceManager.acquire} and {@link WorkspaceManager.get}. */
export interface AcquireOptions extends WorkspaceRequest, CallOptions {
  /**
   * This call's whole wait, for a free slot and for the creation, in ms. A creation that outlasts the
   * wait of every caller of its id is aborted (its factory and `initialize()` get the signal). Default:
   * the manager's `acquireTimeoutMs`.
   */
  timeoutMs?: number;
}

/**
 * A hold on a managed workspace: while any lease on it is held, the manager never evicts it.
 * `await using lease = await manager.acquire(…)` releases it at the end of the block.
 */
export interface WorkspaceLease<W extends Workspace> extends AsyncDisposable {
  /** The workspace's id. */
  readonly workspaceId: string;
  /** The workspace. Calls on it (and on its sandbox, tools and MCP clients) count as calls in flight. */
  readonly workspace: W;
  /** True once released. */
  readonly released: boolean;
  /** Lets the workspace go idle again (it stays open until evicted or closed). Idempotent. */
  release(): void;
}

/** Counts of the manager's workspaces, by where they are. */
export interface WorkspaceManagerStats {
  /** Open and usable. */
  readonly open: number;
  /** Being created or initialized. */
  readonly creating: number;
  /** Waiting for a free slot. */
  readonly queued: number;
  /** Being closed (they still hold their slot). */
  readonly closing: number;
  /** Open ones with a lease held. */
  readonly leased: number;
  /** Open ones with a call in flight. */
  readonly busy: number;
}

interface Entry<W extends Workspace> {
  readonly id: string;
  state: 'queued' | 'creating' | 'open';
  workspace: W | undefined;
  counted: W | undefined;
  readonly activity: Activity;
  leases: number;
  /** Callers waiting for this entry: it is not evictable while they are. */
  waiters: number;
  readonly slot: Deferred;
  ready: Promise<void>;
  readonly abort: AbortController;
}

interface Deferred {
  readonly promise: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  promise.catch(() => {});
  return { promise, resolve, reject };
}

/** Thrown inside the manager when a queued entry is dropped; its callers start over. */
const CANCELLED = Symbol('cancelled');

function checkDuration(value: unknown, name: string, options: { positive?: boolean } = {}): number {
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0 || (options.positive && value === 0))
    throw new WsError(
      'INVALID_ARGUMENT',
      `${name} must be a ${options.positive ? 'positive' : 'non-negative'} number of milliseconds (or Infinity), not ${String(value)}`,
      { details: { [name]: value } },
    );
  return value;
}

/**
 * Hands out workspaces to many users, agents and sessions, on any backend (it is generic over a
 * factory). What AgentScope's workspace managers do, without their single global lock:
 *
 * - the id comes from an explicit `workspaceId`, else from the isolation policy (`per_agent`,
 *   `per_user`, `per_session`; see {@link assignWorkspaceId});
 * - get-or-create with one creation per id: concurrent callers of one id share it, and a slow
 *   creation of one id never delays another id;
 * - at most `maxOpen` workspaces; callers beyond it wait in order, up to `acquireTimeoutMs`;
 * - a sweeper (an unref'd timer) closes workspaces idle past `idleTtlMs`, never one with a lease held
 *   or a call in flight;
 * - `close(id)`, `closeAll()`, `await using`, and events (`open`, `close`, `evict`, `error`).
 *
 * The backend is the registry: a workspace is found again by its id (container names, labels,
 * metadata), so two managers in two processes asking for one id end on the same sandbox.
 *
 * ```ts
 * await using manager = new WorkspaceManager({ factory: (workspaceId) => new LocalWorkspace({ workspaceId, hostWorkdir: `/srv/ws/${workspaceId}` }) });
 * await using lease = await manager.acquire({ userId: 'u1', agentId: 'coder' });
 * await lease.workspace.getSandbox().exec(['ls']);
 * ```
 */
export class WorkspaceManager<W extends Workspace = Workspace> implements AsyncDisposable {
  /** The isolation policy of requests without a `workspaceId`. */
  readonly isolation: IsolationPolicy;
  /** The most workspaces open at once. */
  readonly maxOpen: number;
  private readonly factory: WorkspaceFactory<W>;
  private readonly acquireTimeoutMs: number;
  private readonly idleTtlMs: number;
  private readonly sweepIntervalMs: number;
  private readonly evictIdleWhenFull: boolean;
  private readonly entries = new Map<string, Entry<W>>();
  private readonly closing = new Map<string, Promise<void>>();
  private readonly queue: Entry<W>[] = [];
  private readonly events = new ManagerEvents<W>();
  /** Slots taken: entries being created or open, and workspaces closing. */
  private held = 0;
  private sweeper: ReturnType<typeof setInterval> | undefined;
  private disposed = false;

  /** @throws WsError `INVALID_ARGUMENT` for a missing factory or an unusable option. */
  constructor(options: WorkspaceManagerOptions<W>) {
    if (typeof options?.factory !== 'function')
      throw new WsError('INVALID_ARGUMENT', 'WorkspaceManager needs a factory: (workspaceId) => Workspace');
    this.factory = options.factory;
    this.isolation = checkIsolation(options.isolation ?? 'per_agent');
    const maxOpen = options.maxOpen ?? Number.POSITIVE_INFINITY;
    if (!(maxOpen === Number.POSITIVE_INFINITY || (Number.isInteger(maxOpen) && maxOpen >= 1)))
      throw new WsError(
        'INVALID_ARGUMENT',
        `maxOpen must be a positive integer or Infinity, not ${maxOpen}`,
        {
          details: { maxOpen },
        },
      );
    this.maxOpen = maxOpen;
    this.acquireTimeoutMs = checkDuration(options.acquireTimeoutMs ?? 60_000, 'acquireTimeoutMs');
    this.idleTtlMs = checkDuration(options.idleTtlMs ?? 3_600_000, 'idleTtlMs');
    const interval = checkDuration(
      options.sweepIntervalMs ?? Math.min(Math.max(this.idleTtlMs, 1), 300_000),
      'sweepIntervalMs',
      { positive: true },
    );
    if (!Number.isFinite(interval))
      throw new WsError('INVALID_ARGUMENT', 'sweepIntervalMs must be finite', {
        details: { sweepIntervalMs: interval },
      });
    this.sweepIntervalMs = interval;
    this.evictIdleWhenFull = options.evictIdleWhenFull ?? true;
  }

  /**
   * The workspace id a request maps to under this manager's policy (an explicit `workspaceId` wins).
   * @throws WsError `INVALID_ARGUMENT` (see {@link assignWorkspaceId}).
   */
  assignWorkspaceId(request: WorkspaceRequest): string {
    return assignWorkspaceId(request, this.isolation);
  }

  /**
   * The workspace of a request, created and initialized on first use, with a lease that keeps it from
   * eviction until released. Concurrent callers of one id share one creation.
   *
   * @throws WsError `INVALID_ARGUMENT` for a bad request; `TIMEOUT` when no slot came free and the
   *   workspace was not created within the timeout; `ABORTED` when `signal` fires (a creation already under way goes on, for later callers);
   *   `DISPOSED` after the manager was disposed; what the factory or `initialize()` throws.
   */
  async acquire(options: AcquireOptions = {}): Promise<WorkspaceLease<W>> {
    const entry = await this.enter(options, true);
    return new Lease(entry, () => this.queue.length > 0 && this.pump());
  }

  /**
   * The workspace of a request, as {@link acquire} gives it, without a lease: idle time counts from its
   * last call, so the sweeper may close it between calls. Hold a lease for work that spans calls.
   * @throws as {@link acquire}.
   */
  async get(options: AcquireOptions = {}): Promise<W> {
    const entry = await this.enter(options, false);
    return entry.counted as W;
  }

  /** True when the workspace `workspaceId` is open in this manager. */
  has(workspaceId: string): boolean {
    return this.entries.get(workspaceId)?.state === 'open';
  }

  /** Counts of the manager's workspaces. */
  stats(): WorkspaceManagerStats {
    let open = 0;
    let creating = 0;
    let queued = 0;
    let leased = 0;
    let busy = 0;
    for (const entry of this.entries.values()) {
      if (entry.state === 'open') {
        open++;
        if (entry.leases > 0) leased++;
        if (entry.activity.inFlight > 0) busy++;
      } else if (entry.state === 'creating') creating++;
      else queued++;
    }
    return { open, creating, queued, closing: this.closing.size, leased, busy };
  }

  /** Listens to one event; returns a function that stops listening. */
  on<K extends keyof WorkspaceManagerEvents<W>>(
    name: K,
    listener: WorkspaceManagerListener<W, K>,
  ): () => void {
    return this.events.on(name, listener);
  }

  /** Stops a listener. */
  off<K extends keyof WorkspaceManagerEvents<W>>(name: K, listener: WorkspaceManagerListener<W, K>): void {
    this.events.off(name, listener);
  }

  /**
   * Closes one workspace now, leases or not (their holders then get `DISPOSED`); one being created is
   * closed once created, one waiting for a slot is dropped. Resolves when closed; an unknown id is a
   * no-op. Idempotent.
   * @throws WsError what the workspace's `close()` throws.
   */
  async close(workspaceId: string, options: CallOptions = {}): Promise<void> {
    throwIfAborted(options.signal);
    const entry = this.entries.get(workspaceId);
    if (!entry) {
      await this.closing.get(workspaceId);
      return;
    }
    if (entry.state === 'queued') {
      this.cancel(entry);
      return;
    }
    if (entry.state === 'creating') await entry.ready.catch(() => {});
    if (this.entries.get(workspaceId) !== entry || entry.state !== 'open') {
      await this.closing.get(workspaceId);
      return;
    }
    const error = await this.closeEntry(entry, 'closed', false);
    if (error) throw error;
  }

  /**
   * Closes every workspace (in parallel, waiting for those being created) and drops those waiting for a
   * slot; their callers then start over. The manager stays usable.
   * @throws WsError `BACKEND_ERROR` naming the workspaces whose `close()` failed, after trying them all.
   */
  async closeAll(options: CallOptions = {}): Promise<void> {
    throwIfAborted(options.signal);
    await this.closeEverything(this.disposed ? 'disposed' : 'closed');
  }

  /**
   * Closes the workspaces idle past the TTL (no lease, no call in flight) now, as the sweeper does
   * periodically; returns their ids once closed. Close failures are reported as `error` events.
   */
  async sweep(): Promise<string[]> {
    const now = performance.now();
    const idle = [...this.entries.values()].filter(
      (entry) => this.evictable(entry) && now - entry.activity.lastUsed >= this.idleTtlMs,
    );
    await Promise.all(idle.map((entry) => this.evict(entry, 'idle', now)));
    return idle.map((entry) => entry.id);
  }

  /** Closes everything, stops the sweeper, and refuses further requests with `DISPOSED`. Idempotent. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.disposed = true;
    const reason = new WsError('DISPOSED', 'The workspace manager is disposed');
    for (const entry of this.entries.values()) if (entry.state === 'creating') entry.abort.abort(reason);
    await this.closeEverything('disposed').catch(() => {});
  }

  private async closeEverything(reason: WorkspaceCloseReason): Promise<void> {
    this.stopSweeper();
    for (const entry of [...this.queue]) this.cancel(entry);
    const creating = [...this.entries.values()].filter((entry) => entry.state === 'creating');
    await Promise.all(creating.map((entry) => entry.ready.catch(() => {})));
    const open = [...this.entries.values()].filter((entry) => entry.state === 'open');
    const failures = (
      await Promise.all(
        open.map(async (entry) => ({ entry, error: await this.closeEntry(entry, reason, true) })),
      )
    ).filter((result) => result.error !== undefined);
    await Promise.all([...this.closing.values()]);
    if (failures.length > 0) {
      const workspaceIds = failures.map((failure) => failure.entry.id);
      throw new WsError(
        'BACKEND_ERROR',
        `Closing ${workspaceIds.length} workspace(s) failed: ${workspaceIds.join(', ')}`,
        {
          cause: failures[0]?.error,
          details: { workspaceIds },
        },
      );
    }
  }

  private assertUsable(): void {
    if (this.disposed) throw new WsError('DISPOSED', 'The workspace manager is disposed');
  }

  /** The open entry of a request (created as needed), with a lease taken when `lease`. */
  private async enter(options: AcquireOptions, lease: boolean): Promise<Entry<W>> {
    this.assertUsable();
    throwIfAborted(options.signal);
    const workspaceId = this.assignWorkspaceId(options);
    const timeoutMs = checkDuration(options.timeoutMs ?? this.acquireTimeoutMs, 'timeoutMs');
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      let entry = this.entries.get(workspaceId);
      // A workspace closed behind the manager's back (through the workspace itself) is replaced.
      if (entry?.state === 'open' && isShut(entry.workspace)) {
        await this.closeEntry(entry, 'closed', true);
        entry = undefined;
      }
      if (!entry) entry = this.startEntry(workspaceId);
      if (entry.state !== 'open') {
        entry.waiters++;
        try {
          await this.waitFor(entry, options.signal, timeoutMs, deadline);
        } catch (error) {
          if (error !== CANCELLED) throw error;
        } finally {
          entry.waiters--;
          if (entry.state === 'queued' && entry.waiters === 0) this.cancel(entry);
        }
        this.assertUsable();
        if (this.entries.get(workspaceId) !== entry || (entry.state as Entry<W>['state']) !== 'open')
          continue;
      }
      // Taken in the same step as the entry is found open, so no eviction comes in between.
      if (lease) entry.leases++;
      entry.activity.lastUsed = performance.now();
      return entry;
    }
  }

  /**
   * Waits for a slot, then for the creation, until `deadline` (`timeoutMs` after the call began);
   * `signal` ends the wait. A creation that outlasts the wait of its last caller is aborted.
   */
  private async waitFor(
    entry: Entry<W>,
    signal: AbortSignal | undefined,
    timeoutMs: number,
    deadline: number,
  ): Promise<void> {
    const left = () => Math.max(0, deadline - performance.now());
    if (entry.state === 'queued') {
      await race(entry.slot.promise, signal, {
        ms: left(),
        error: () =>
          new WsError(
            'TIMEOUT',
            `No workspace slot came free within ${timeoutMs} ms (maxOpen ${this.maxOpen}, ${this.queue.length} waiting)`,
            { details: { workspaceId: entry.id, timeoutMs, maxOpen: this.maxOpen } },
          ),
      });
    }
    try {
      await race(entry.ready, signal, {
        ms: left(),
        error: () =>
          new WsError('TIMEOUT', `The workspace ${entry.id} was not created within ${timeoutMs} ms`, {
            details: { workspaceId: entry.id, timeoutMs },
          }),
      });
    } catch (error) {
      if (isWsError(error, 'TIMEOUT') && entry.waiters === 1 && entry.state === 'creating')
        entry.abort.abort(error);
      throw error;
    }
  }

  private startEntry(workspaceId: string): Entry<W> {
    const entry: Entry<W> = {
      id: workspaceId,
      state: 'queued',
      workspace: undefined,
      counted: undefined,
      // A call ending or a lease released may let a waiting caller evict this workspace.
      activity: new Activity(() => this.queue.length > 0 && this.pump()),
      leases: 0,
      waiters: 0,
      slot: deferred(),
      ready: Promise.resolve(),
      abort: new AbortController(),
    };
    this.entries.set(workspaceId, entry);
    entry.ready = this.create(entry);
    entry.ready.catch(() => {});
    this.queue.push(entry);
    this.pump();
    return entry;
  }

  /** Gives free slots to queued entries in order; when none is free, evicts idle workspaces for them. */
  private pump(): void {
    while (this.queue.length > 0 && this.held < this.maxOpen) {
      const entry = this.queue.shift() as Entry<W>;
      this.held++;
      entry.state = 'creating';
      entry.slot.resolve();
    }
    if (!this.evictIdleWhenFull || this.queue.length === 0) return;
    // Workspaces already closing will free their slots; evict only for the callers beyond them.
    let needed = this.queue.length - this.closing.size;
    const now = performance.now();
    const candidates = [...this.entries.values()]
      .filter((entry) => this.evictable(entry))
      .sort((a, b) => a.activity.lastUsed - b.activity.lastUsed);
    for (const entry of candidates) {
      if (needed-- <= 0) break;
      void this.evict(entry, 'capacity', now);
    }
  }

  private async create(entry: Entry<W>): Promise<void> {
    await entry.slot.promise;
    // A workspace of the same id still closing is gone before the new one opens.
    await this.closing.get(entry.id);
    const started = performance.now();
    let workspace: W | undefined;
    try {
      entry.abort.signal.throwIfAborted();
      workspace = await this.factory(entry.id, { signal: entry.abort.signal });
      if (typeof workspace !== 'object' || workspace === null || workspace.id !== entry.id)
        throw new WsError(
          'INVALID_ARGUMENT',
          `The factory returned ${typeof workspace === 'object' && workspace !== null ? `the workspace ${JSON.stringify(workspace.id)}` : String(workspace)} for the id ${JSON.stringify(entry.id)}`,
          { details: { workspaceId: entry.id } },
        );
      await workspace.initialize({ signal: entry.abort.signal });
    } catch (thrown) {
      const error = isWsError(thrown)
        ? thrown
        : entry.abort.signal.aborted
          ? abortError(entry.abort.signal)
          : new WsError('BACKEND_ERROR', `Creating the workspace ${entry.id} failed: ${String(thrown)}`, {
              cause: thrown,
            });
      await workspace?.close?.().catch(() => {});
      if (this.entries.get(entry.id) === entry) this.entries.delete(entry.id);
      this.held--;
      this.events.emit('error', { workspaceId: entry.id, operation: 'open', error });
      this.pump();
      throw error;
    }
    entry.workspace = workspace;
    entry.counted = countedWorkspace(workspace, entry.activity);
    entry.state = 'open';
    entry.activity.lastUsed = performance.now();
    this.events.emit('open', {
      workspaceId: entry.id,
      workspace: entry.counted,
      durationMs: performance.now() - started,
    });
    this.startSweeper();
  }

  /** Drops an entry still waiting for a slot; its callers start over. */
  private cancel(entry: Entry<W>): void {
    if (entry.state !== 'queued') return;
    const index = this.queue.indexOf(entry);
    if (index >= 0) this.queue.splice(index, 1);
    if (this.entries.get(entry.id) === entry) this.entries.delete(entry.id);
    entry.slot.reject(CANCELLED);
  }

  private evictable(entry: Entry<W>): boolean {
    return (
      entry.state === 'open' && entry.leases === 0 && entry.waiters === 0 && entry.activity.inFlight === 0
    );
  }

  private async evict(entry: Entry<W>, reason: 'idle' | 'capacity', now: number): Promise<void> {
    if (this.entries.get(entry.id) !== entry || !this.evictable(entry)) return;
    this.events.emit('evict', { workspaceId: entry.id, reason, idleMs: now - entry.activity.lastUsed });
    await this.closeEntry(entry, 'evicted', true);
  }

  /**
   * Removes an open entry and closes its workspace; the slot is freed once closed. Returns the close's
   * error (also emitted as an `error` event when `report`).
   */
  private closeEntry(
    entry: Entry<W>,
    reason: WorkspaceCloseReason,
    report: boolean,
  ): Promise<WsError | undefined> {
    if (this.entries.get(entry.id) === entry) this.entries.delete(entry.id);
    let failure: WsError | undefined;
    const closed = (async () => {
      try {
        await entry.workspace?.close();
      } catch (thrown) {
        failure = isWsError(thrown)
          ? thrown
          : new WsError('BACKEND_ERROR', `Closing the workspace ${entry.id} failed: ${String(thrown)}`, {
              cause: thrown,
            });
        if (report) this.events.emit('error', { workspaceId: entry.id, operation: 'close', error: failure });
      }
    })();
    const done = closed.then(() => {
      if (this.closing.get(entry.id) === done) this.closing.delete(entry.id);
      this.held--;
      this.events.emit('close', { workspaceId: entry.id, reason });
      this.pump();
    });
    this.closing.set(entry.id, done);
    return done.then(() => failure);
  }

  private startSweeper(): void {
    if (this.sweeper || this.disposed || !Number.isFinite(this.idleTtlMs)) return;
    this.sweeper = setInterval(() => void this.sweep(), this.sweepIntervalMs);
    this.sweeper.unref?.();
  }

  private stopSweeper(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
  }
}

function isShut(workspace: Workspace | undefined): boolean {
  const state = workspace?.state;
  return state === 'closing' || state === 'closed';
}

/** `promise`, unless `signal` fires (`ABORTED`) or the timeout passes (its error) first. */
async function race(
  promise: Promise<void>,
  signal: AbortSignal | undefined,
  timeout?: { ms: number; error: () => WsError },
): Promise<void> {
  const timed = timeout !== undefined && Number.isFinite(timeout.ms);
  if (!signal && !timed) return promise;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  try {
    await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        if (timed) timer = setTimeout(() => reject(timeout.error()), timeout.ms);
        if (signal) {
          onAbort = () => reject(abortError(signal));
          if (signal.aborted) onAbort();
          else signal.addEventListener('abort', onAbort, { once: true });
        }
      }),
    ]);
  } finally {
    if (timer) clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
}

class Lease<W extends Workspace> implements WorkspaceLease<W> {
  private done = false;

  constructor(
    private readonly entry: Entry<W>,
    private readonly onRelease: () => void,
  ) {}

  get workspaceId(): string {
    return this.entry.id;
  }

  get workspace(): W {
    return this.entry.counted as W;
  }

  get released(): boolean {
    return this.done;
  }

  release(): void {
    if (this.done) return;
    this.done = true;
    this.entry.leases--;
    this.entry.activity.lastUsed = performance.now();
    this.onRelease();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.release();
  }
}
