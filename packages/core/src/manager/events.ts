import { debugLine } from '../backend/debug-log.js';
import type { WsError } from '../contracts/errors.js';

/** Why a managed workspace was closed. */
export type WorkspaceCloseReason = 'closed' | 'evicted' | 'disposed';

/** What the manager reports, by event name. */
export interface WorkspaceManagerEvents<W> {
  /** A workspace was created and initialized; `durationMs` is how long that took. */
  open: {
    /** The workspace's id. */
    readonly workspaceId: string;
    /** The initialized workspace. */
    readonly workspace: W;
    /** How long creating and initializing it took, in milliseconds. */
    readonly durationMs: number;
  };
  /** A workspace finished closing (successfully or not: a failure also emits `error`). */
  close: {
    /** The workspace's id. */
    readonly workspaceId: string;
    /** Why it was closed. */
    readonly reason: WorkspaceCloseReason;
  };
  /**
   * The manager chose to close a workspace nobody held: idle past the TTL (`idle`), or the least
   * recently used one while callers waited for a slot (`capacity`). `idleMs` is how long it sat unused.
   */
  evict: {
    /** The workspace's id. */
    readonly workspaceId: string;
    /** `idle`: unused past the TTL; `capacity`: the least recently used while callers waited for a slot. */
    readonly reason: 'idle' | 'capacity';
    /** How long it sat unused, in milliseconds. */
    readonly idleMs: number;
  };
  /** A failure with no caller to throw to, or one also thrown to the callers of an `open`. */
  error: {
    /** The workspace's id. */
    readonly workspaceId: string;
    /** What failed: opening or closing the workspace. */
    readonly operation: 'open' | 'close';
    /** The failure. */
    readonly error: WsError;
  };
}

/** A listener of one event. */
export type WorkspaceManagerListener<W, K extends keyof WorkspaceManagerEvents<W>> = (
  event: WorkspaceManagerEvents<W>[K],
) => void;

/**
 * Listeners by event name. A listener that throws does not stop the others or the manager; its error
 * is reported as a process warning.
 */
export class ManagerEvents<W> {
  private readonly listeners = new Map<keyof WorkspaceManagerEvents<W>, Set<(event: never) => void>>();

  on<K extends keyof WorkspaceManagerEvents<W>>(
    name: K,
    listener: WorkspaceManagerListener<W, K>,
  ): () => void {
    let set = this.listeners.get(name);
    if (!set) {
      set = new Set();
      this.listeners.set(name, set);
    }
    set.add(listener as (event: never) => void);
    return () => this.off(name, listener);
  }

  off<K extends keyof WorkspaceManagerEvents<W>>(name: K, listener: WorkspaceManagerListener<W, K>): void {
    this.listeners.get(name)?.delete(listener as (event: never) => void);
  }

  emit<K extends keyof WorkspaceManagerEvents<W>>(name: K, event: WorkspaceManagerEvents<W>[K]): void {
    debugLine('ws:manager', describeManagerEvent(String(name), event as ManagerEventFields));
    for (const listener of [...(this.listeners.get(name) ?? [])]) {
      try {
        (listener as WorkspaceManagerListener<W, K>)(event);
      } catch (error) {
        // The manager's bookkeeping must go on; the listener's failure is still shown.
        process.emitWarning(error instanceof Error ? error : String(error), {
          type: 'WorkspaceManagerListenerError',
          detail: `A listener of the workspace manager's ${String(name)} event threw`,
        });
      }
    }
  }
}

/** The fields the manager's events may have, for their `DEBUG=ws:manager` line. */
interface ManagerEventFields {
  readonly workspaceId: string;
  readonly durationMs?: number;
  readonly reason?: string;
  readonly idleMs?: number;
  readonly operation?: string;
  readonly error?: WsError;
}

function describeManagerEvent(name: string, event: ManagerEventFields): string {
  const parts = [`${name} ${event.workspaceId}`];
  if (event.durationMs !== undefined) parts.push(`in ${Math.round(event.durationMs)} ms`);
  if (event.reason !== undefined)
    parts.push(
      `(${event.reason}${event.idleMs !== undefined ? `, idle ${Math.round(event.idleMs)} ms` : ''})`,
    );
  if (event.error) parts.push(`${event.operation ?? ''} failed: ${event.error.message}`);
  return parts.join(' ');
}
