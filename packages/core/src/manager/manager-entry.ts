import { abortError, type WsError } from '../contracts/errors.js';
import type { Workspace } from '../contracts/workspace.js';
import type { Activity } from './activity.js';
import type { WorkspaceInfo, WorkspaceManagerStats } from './manager-options.js';
import type { WorkspaceRequester } from './workspace-factory.js';

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

/** A promise with its settling functions; a rejection nobody awaits is not reported as unhandled. */
export interface Deferred {
  /** Settles as `resolve` or `reject` is called first. */
  readonly promise: Promise<void>;
  /** Fulfils the promise. */
  resolve(): void;
  /** Rejects the promise with `error`. */
  reject(error: unknown): void;
}

/** A new unsettled {@link Deferred}. */
export function deferred(): Deferred {
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
export const CANCELLED = Symbol('cancelled');

/** `promise`, unless `signal` fires (`ABORTED`) or the timeout passes (its error) first. */
export async function race(
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

/** The manager's record of one workspace id: where it is, and who holds or awaits it. */
export interface Entry<W extends Workspace> {
  /** The workspace id. */
  readonly id: string;
  /** The user, agent and session of the request that created it. */
  readonly request: WorkspaceRequester;
  /** Waiting for a slot, being created, or open. */
  state: 'queued' | 'creating' | 'open';
  /** The workspace, once the factory returned it. */
  workspace: W | undefined;
  /** The workspace as handed out: its calls count in {@link Entry.activity}. */
  counted: W | undefined;
  /** Calls in flight and the time of last use. */
  readonly activity: Activity;
  /** Leases held on it. */
  leases: number;
  /** Callers waiting for this entry: it is not evictable while they are. */
  waiters: number;
  /** Resolves once the entry was given a slot; rejects with {@link CANCELLED} when dropped. */
  readonly slot: Deferred;
  /** Settles once the workspace is created and initialized, or failed to be. */
  ready: Promise<void>;
  /** Aborts the creation. */
  readonly abort: AbortController;
}

/** Counts of `entries` by state, with `closing` workspaces being closed. */
export function countEntries<W extends Workspace>(
  entries: Iterable<Entry<W>>,
  closing: number,
): WorkspaceManagerStats {
  let open = 0;
  let creating = 0;
  let queued = 0;
  let leased = 0;
  let busy = 0;
  for (const entry of entries) {
    if (entry.state === 'open') {
      open++;
      if (entry.leases > 0) leased++;
      if (entry.activity.inFlight > 0) busy++;
    } else if (entry.state === 'creating') creating++;
    else queued++;
  }
  return { open, creating, queued, closing, leased, busy };
}

/** What `WorkspaceManager.list()` says of one entry, `now` being `performance.now()`. */
export function describeEntry<W extends Workspace>(entry: Entry<W>, now: number): WorkspaceInfo {
  const { userId, agentId, sessionId } = entry.request;
  return {
    workspaceId: entry.id,
    ...(userId !== undefined ? { userId } : {}),
    ...(agentId !== undefined ? { agentId } : {}),
    ...(sessionId !== undefined ? { sessionId } : {}),
    state: entry.state,
    idleMs:
      entry.state === 'open' && entry.activity.inFlight === 0
        ? Math.max(0, Math.round(now - entry.activity.lastUsed))
        : 0,
    leases: entry.leases,
    inFlight: entry.activity.inFlight,
    waiters: entry.waiters,
  };
}

/** True when `workspace` is closing or closed. */
export function isShut(workspace: Workspace | undefined): boolean {
  const state = workspace?.state;
  return state === 'closing' || state === 'closed';
}

/** The lease handed out on an open entry; releasing it calls `onRelease` once. */
export class Lease<W extends Workspace> implements WorkspaceLease<W> {
  private done = false;

  /** Holds `entry`, whose lease count the caller has already raised. */
  constructor(
    private readonly entry: Entry<W>,
    private readonly onRelease: () => void,
  ) {}

  /** The workspace's id. */
  get workspaceId(): string {
    return this.entry.id;
  }

  /** The workspace, its calls counted. */
  get workspace(): W {
    return this.entry.counted as W;
  }

  /** True once released. */
  get released(): boolean {
    return this.done;
  }

  /** Drops the hold and marks the workspace used now. Idempotent. */
  release(): void {
    if (this.done) return;
    this.done = true;
    this.entry.leases--;
    this.entry.activity.lastUsed = performance.now();
    this.onRelease();
  }

  /** Releases the lease. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.release();
  }
}
