import { debugLine } from '../backend/debug-log.js';
import { throwIfAborted, WsError } from '../contracts/errors.js';
import type { CallOptions } from '../contracts/workspace.js';

/** Options of a backend's reaper (`gcDocker`, `gcLocal`, …). */
export interface GcOptions extends CallOptions {
  /**
   * Only what has been unused at least this long is removed, in ms: time since it was created or
   * last attached, whichever is later. `0` removes every unused thing; `Infinity` removes nothing.
   */
  olderThanMs: number;
  /** Only what carries this owner tag (the `owner` option of the workspaces). Default: every owner. */
  owner?: string | undefined;
  /** Decide but remove nothing: `removed` then lists what would have been removed. Default: false. */
  dryRun?: boolean | undefined;
}

/** What a reaper found: a sandbox, a container, a host folder, a temporary file. */
export interface GcResource {
  /** What kind of thing it is (`container`, `runtime-folder`, `temporary-file`, …). */
  readonly kind: 'container' | 'sandbox' | 'runtime-folder' | 'temporary-file' | (string & {});
  /** Its name where it lives: a container name, a sandbox id, an absolute host path. */
  readonly name: string;
  /** The workspace it belongs to, when known. */
  readonly workspaceId?: string | undefined;
  /** Its owner tag, when it carries one. */
  readonly owner?: string | undefined;
  /** The user it was opened for, when it carries one (`ws.user`). */
  readonly userId?: string | undefined;
  /** The agent it was opened for, when it carries one (`ws.agent`). */
  readonly agentId?: string | undefined;
  /** How long it has been unused, in ms. */
  readonly idleMs: number;
}

/**
 * Why a reaper kept something: `young`, unused for less than `olderThanMs`; `in-use`, a live process
 * holds it (an open workspace, a lease, a writer still running); `failed`, removing it failed (`error`).
 */
export type GcKeepReason = 'young' | 'in-use' | 'failed';

/** A resource the reaper kept, and why. */
export interface GcKept extends GcResource {
  /** Why it was kept. */
  readonly reason: GcKeepReason;
  /** Why removing it failed, for `failed`. */
  readonly error?: WsError | undefined;
}

/** What a reaper did. Every listed resource is in exactly one of `removed` and `kept`. */
export interface GcReport {
  /** True when nothing was removed on purpose (`removed` lists what would have been). */
  readonly dryRun: boolean;
  /** Everything found that carries this project's marks (and the owner tag, when one was given). */
  readonly listed: readonly GcResource[];
  /** What was removed (or, in a dry run, would have been). */
  readonly removed: readonly GcResource[];
  /** What was kept, each with its reason. */
  readonly kept: readonly GcKept[];
}

/** A backend's reaper: finds what workspaces left behind (crashed services, killed writers) and removes it. */
export interface Reaper<O extends GcOptions = GcOptions> {
  /**
   * Lists what carries this project's marks and removes what has been unused for `olderThanMs` and is
   * not in use; returns what it did. A failure to remove one thing is reported in `kept`, not thrown.
   * @throws WsError `INVALID_ARGUMENT` for bad options; `BACKEND_UNAVAILABLE` when the backend cannot
   *   be reached; `ABORTED` when `signal` fires (its `details.report` holds what was done until then).
   */
  gc(options: O): Promise<GcReport>;
}

/**
 * Collects a reaper's decisions into a {@link GcReport}; `abort` builds the `ABORTED` error that
 * carries what was done so far. For backend authors.
 */
export class GcLedger {
  /** Everything recorded so far, in order. */
  readonly listed: GcResource[] = [];
  /** What was removed (in a dry run: would have been). */
  readonly removed: GcResource[] = [];
  /** What was kept, with why. */
  readonly kept: GcKept[] = [];

  /** An empty ledger. @param options The reaper's checked options (see `checkGcOptions`): the age, dry run and signal. */
  constructor(readonly options: Readonly<GcOptions>) {}

  /** Records a resource as listed and kept for `reason`. */
  keep(resource: GcResource, reason: GcKeepReason, error?: WsError): void {
    this.listed.push(resource);
    this.kept.push({ ...resource, reason, ...(error ? { error } : {}) });
    debugLine(
      'ws:reap',
      `kept ${resource.kind} ${resource.name} (${reason}, idle ${Math.round(resource.idleMs / 1000)} s)${error ? `: ${error.message}` : ''}`,
    );
  }

  /** Records a resource as listed and removed (in a dry run: would have been). */
  remove(resource: GcResource): void {
    this.listed.push(resource);
    this.removed.push(resource);
    debugLine(
      'ws:reap',
      `${this.options.dryRun ? 'would remove' : 'removed'} ${resource.kind} ${resource.name} (idle ${Math.round(resource.idleMs / 1000)} s)`,
    );
  }

  /** The report. */
  report(): GcReport {
    return {
      dryRun: this.options.dryRun === true,
      listed: [...this.listed],
      removed: [...this.removed],
      kept: [...this.kept],
    };
  }

  /** Throws `ABORTED` with the report so far when the signal fired. */
  throwIfAborted(): void {
    if (this.options.signal?.aborted)
      throw new WsError('ABORTED', 'The garbage collection was aborted', {
        cause: this.options.signal.reason,
        details: { report: this.report() },
      });
  }
}

/**
 * Checks a reaper's options and returns them with defaults applied.
 * @throws WsError `INVALID_ARGUMENT` for a missing or negative `olderThanMs`, an empty or non-string
 *   `owner`, a non-boolean `dryRun`; `ABORTED` when `signal` already fired.
 */
export function checkGcOptions<O extends GcOptions>(
  options: O,
): O & {
  /** Whether to only report what would be removed; false when `dryRun` was not given. */
  dryRun: boolean;
} {
  if (typeof options !== 'object' || options === null)
    throw new WsError('INVALID_ARGUMENT', 'gc() needs an options object with olderThanMs');
  throwIfAborted(options.signal);
  const { olderThanMs, owner, dryRun } = options;
  if (typeof olderThanMs !== 'number' || Number.isNaN(olderThanMs) || olderThanMs < 0)
    throw new WsError(
      'INVALID_ARGUMENT',
      `olderThanMs must be a non-negative number of milliseconds (or Infinity), not ${String(olderThanMs)}`,
      { details: { olderThanMs } },
    );
  if (owner !== undefined && (typeof owner !== 'string' || owner.length === 0))
    throw new WsError('INVALID_ARGUMENT', `owner must be a non-empty string, not ${JSON.stringify(owner)}`, {
      details: { owner },
    });
  if (dryRun !== undefined && typeof dryRun !== 'boolean')
    throw new WsError('INVALID_ARGUMENT', `dryRun must be a boolean, not ${JSON.stringify(dryRun)}`);
  return { ...options, dryRun: dryRun === true };
}
