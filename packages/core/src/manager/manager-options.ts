import { WsError } from '../contracts/errors.js';
import type { CallOptions, Workspace } from '../contracts/workspace.js';
import { checkIsolation, type IsolationPolicy, type WorkspaceRequest } from './isolation.js';
import type { WorkspaceFactory } from './workspace-factory.js';

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

/** One workspace a manager holds, as `WorkspaceManager.list()` describes it. */
export interface WorkspaceInfo {
  /** Its id. */
  readonly workspaceId: string;
  /** The user of the request that created it, when it named one. */
  readonly userId?: string;
  /** The agent of the request that created it, when it named one. */
  readonly agentId?: string;
  /** The session of the request that created it, when it named one. */
  readonly sessionId?: string;
  /** Waiting for a slot, being created, open, or being closed. */
  readonly state: 'queued' | 'creating' | 'open' | 'closing';
  /** How long it has been unused (no call in flight, since the last call or lease), in whole ms; 0 while in use or not open. */
  readonly idleMs: number;
  /** Leases held on it. */
  readonly leases: number;
  /** Calls running on it now (spawned processes count until they exit). */
  readonly inFlight: number;
  /** Callers waiting for it to be created. */
  readonly waiters: number;
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

/** {@link WorkspaceManagerOptions} checked, with every default filled in. */
export interface ManagerSettings<W extends Workspace> {
  /** Builds the workspace of an id. */
  readonly factory: WorkspaceFactory<W>;
  /** How a request without a `workspaceId` is mapped to one. */
  readonly isolation: IsolationPolicy;
  /** The most workspaces open at once; `Infinity` for no limit. */
  readonly maxOpen: number;
  /** A caller's default wait for a slot and the creation, in ms. */
  readonly acquireTimeoutMs: number;
  /** How long an unheld workspace stays open unused, in ms; `Infinity` for ever. */
  readonly idleTtlMs: number;
  /** How often the sweeper runs, in ms (finite). */
  readonly sweepIntervalMs: number;
  /** Whether waiting callers evict the least recently used idle workspace. */
  readonly evictIdleWhenFull: boolean;
}

/**
 * A duration option in ms: a non-negative number (positive with `positive`), `Infinity` allowed.
 * @throws WsError `INVALID_ARGUMENT` naming the option otherwise.
 */
export function checkDuration(value: unknown, name: string, options: { positive?: boolean } = {}): number {
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0 || (options.positive && value === 0))
    throw new WsError(
      'INVALID_ARGUMENT',
      `${name} must be a ${options.positive ? 'positive' : 'non-negative'} number of milliseconds (or Infinity), not ${String(value)}`,
      { details: { [name]: value } },
    );
  return value;
}

/**
 * Checks a manager's options and fills in their defaults.
 * @throws WsError `INVALID_ARGUMENT` for a missing factory or an unusable option.
 */
export function managerSettings<W extends Workspace>(
  options: WorkspaceManagerOptions<W>,
): ManagerSettings<W> {
  if (typeof options?.factory !== 'function')
    throw new WsError('INVALID_ARGUMENT', 'WorkspaceManager needs a factory: (workspaceId) => Workspace');
  const isolation = checkIsolation(options.isolation ?? 'per_agent');
  const maxOpen = options.maxOpen ?? Number.POSITIVE_INFINITY;
  if (!(maxOpen === Number.POSITIVE_INFINITY || (Number.isInteger(maxOpen) && maxOpen >= 1)))
    throw new WsError('INVALID_ARGUMENT', `maxOpen must be a positive integer or Infinity, not ${maxOpen}`, {
      details: { maxOpen },
    });
  const acquireTimeoutMs = checkDuration(options.acquireTimeoutMs ?? 60_000, 'acquireTimeoutMs');
  const idleTtlMs = checkDuration(options.idleTtlMs ?? 3_600_000, 'idleTtlMs');
  const sweepIntervalMs = checkDuration(
    options.sweepIntervalMs ?? Math.min(Math.max(idleTtlMs, 1), 300_000),
    'sweepIntervalMs',
    { positive: true },
  );
  if (!Number.isFinite(sweepIntervalMs))
    throw new WsError('INVALID_ARGUMENT', 'sweepIntervalMs must be finite', {
      details: { sweepIntervalMs },
    });
  return {
    factory: options.factory,
    isolation,
    maxOpen,
    acquireTimeoutMs,
    idleTtlMs,
    sweepIntervalMs,
    evictIdleWhenFull: options.evictIdleWhenFull ?? true,
  };
}
