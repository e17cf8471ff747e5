import { isWsError, throwIfAborted, WsError } from '../contracts/errors.js';
import type { CallOptions, Workspace } from '../contracts/workspace.js';
import { Activity, countedWorkspace } from './activity.js';
import {
  ManagerEvents,
  type WorkspaceCloseReason,
  type WorkspaceManagerEvents,
  type WorkspaceManagerListener,
} from './events.js';
import { Eviction } from './eviction.js';
import { assignWorkspaceId, type IsolationPolicy, type WorkspaceRequest } from './isolation.js';
import {
  CANCELLED,
  countEntries,
  deferred,
  describeEntry,
  type Entry,
  isShut,
  Lease,
  race,
  type WorkspaceLease,
} from './manager-entry.js';
import {
  type AcquireOptions,
  checkDuration,
  managerSettings,
  type WorkspaceInfo,
  type WorkspaceManagerOptions,
  type WorkspaceManagerStats,
} from './manager-options.js';
import { openWorkspace, type WorkspaceFactory } from './workspace-factory.js';

export type { WorkspaceLease } from './manager-entry.js';
export type {
  AcquireOptions,
  WorkspaceInfo,
  WorkspaceManagerOptions,
  WorkspaceManagerStats,
} from './manager-options.js';
export type { WorkspaceFactory, WorkspaceFactoryContext, WorkspaceRequester } from './workspace-factory.js';

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
  private readonly evictIdleWhenFull: boolean;
  private readonly entries = new Map<string, Entry<W>>();
  private readonly closing = new Map<string, Promise<void>>();
  /** Who asked for each workspace being closed, for {@link list}. */
  private readonly closingRequests = new Map<string, Entry<W>['request']>();
  private readonly queue: Entry<W>[] = [];
  private readonly events = new ManagerEvents<W>();
  private readonly eviction: Eviction<W>;
  /** Slots taken: entries being created or open, and workspaces closing. */
  private held = 0;
  private disposed = false;

  /** @throws WsError `INVALID_ARGUMENT` for a missing factory or an unusable option. */
  constructor(options: WorkspaceManagerOptions<W>) {
    const settings = managerSettings(options);
    this.factory = settings.factory;
    this.isolation = settings.isolation;
    this.maxOpen = settings.maxOpen;
    this.acquireTimeoutMs = settings.acquireTimeoutMs;
    this.evictIdleWhenFull = settings.evictIdleWhenFull;
    this.eviction = new Eviction(settings, {
      entries: this.entries,
      events: this.events,
      close: (entry) => this.closeEntry(entry, 'evicted', true),
    });
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

  /**
   * What the manager holds, oldest first: every workspace waiting, being created, open or closing,
   * with the user, agent and session of the request that created it, its idle time, leases and calls
   * in flight. A snapshot: later calls change it.
   */
  list(): WorkspaceInfo[] {
    const now = performance.now();
    const listed = [...this.entries.values()].map((entry) => describeEntry(entry, now));
    const closingOnly = [...this.closingRequests.entries()].filter(([id]) => !this.entries.has(id));
    for (const [workspaceId, request] of closingOnly)
      listed.push({
        workspaceId,
        ...(request.userId !== undefined ? { userId: request.userId } : {}),
        ...(request.agentId !== undefined ? { agentId: request.agentId } : {}),
        ...(request.sessionId !== undefined ? { sessionId: request.sessionId } : {}),
        state: 'closing',
        idleMs: 0,
        leases: 0,
        inFlight: 0,
        waiters: 0,
      });
    return listed;
  }

  /** Counts of the manager's workspaces. */
  stats(): WorkspaceManagerStats {
    return countEntries(this.entries.values(), this.closing.size);
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
    return this.eviction.sweep();
  }

  /** Closes everything, stops the sweeper, and refuses further requests with `DISPOSED`. Idempotent. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.disposed = true;
    const reason = new WsError('DISPOSED', 'The workspace manager is disposed');
    for (const entry of this.entries.values()) if (entry.state === 'creating') entry.abort.abort(reason);
    await this.closeEverything('disposed').catch(() => {});
  }

  private async closeEverything(reason: WorkspaceCloseReason): Promise<void> {
    this.eviction.stop();
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
      if (!entry) entry = this.startEntry(workspaceId, options);
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

  private startEntry(workspaceId: string, request: AcquireOptions): Entry<W> {
    const entry: Entry<W> = {
      id: workspaceId,
      request: {
        ...(request.userId !== undefined ? { userId: request.userId } : {}),
        ...(request.agentId !== undefined ? { agentId: request.agentId } : {}),
        ...(request.sessionId !== undefined ? { sessionId: request.sessionId } : {}),
      },
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
    this.eviction.makeRoom(this.queue.length - this.closing.size);
  }

  private async create(entry: Entry<W>): Promise<void> {
    await entry.slot.promise;
    // A workspace of the same id still closing is gone before the new one opens.
    await this.closing.get(entry.id);
    const started = performance.now();
    let workspace: W;
    try {
      workspace = await openWorkspace(this.factory, entry.id, entry.abort.signal, entry.request);
    } catch (error) {
      if (this.entries.get(entry.id) === entry) this.entries.delete(entry.id);
      this.held--;
      this.events.emit('error', { workspaceId: entry.id, operation: 'open', error: error as WsError });
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
    if (!this.disposed) this.eviction.start();
  }

  /** Drops an entry still waiting for a slot; its callers start over. */
  private cancel(entry: Entry<W>): void {
    if (entry.state !== 'queued') return;
    const index = this.queue.indexOf(entry);
    if (index >= 0) this.queue.splice(index, 1);
    if (this.entries.get(entry.id) === entry) this.entries.delete(entry.id);
    entry.slot.reject(CANCELLED);
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
      if (this.closing.get(entry.id) === done) {
        this.closing.delete(entry.id);
        this.closingRequests.delete(entry.id);
      }
      this.held--;
      this.events.emit('close', { workspaceId: entry.id, reason });
      this.pump();
    });
    this.closing.set(entry.id, done);
    this.closingRequests.set(entry.id, entry.request);
    return done.then(() => failure);
  }
}
