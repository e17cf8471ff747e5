import { type GcOptions, type GcReport, WsError } from '@ws/core';
import { checkGcOptions, clearWriterLeftovers, GcLedger, type Reaper } from '@ws/core/backend';

/** Options of {@link gcLocal}. */
export interface LocalGcOptions extends GcOptions {
  /** Host folders to clean: workdirs, or folders holding workdirs (searched through, links not followed). */
  roots: readonly string[];
}

/**
 * Clears what killed writers left in local workspaces: temporary files of whole-file writes
 * (`.ws-*.tmp`), of offloaded context (`*.tmp-*`, `.append-*`, a stale `context.jsonl.lock`) and
 * half-copied skill folders, anywhere under `roots`, once unmodified for `olderThanMs` and their
 * writer (when the name says which) is no longer running. A workspace's own files are never touched.
 * Local workspaces run no gateway and keep no runtime folder, so there is nothing else to clear.
 *
 * @throws WsError `INVALID_ARGUMENT` for bad options (local files carry no owner tag, so `owner` is
 *   refused rather than ignored), `NOT_FOUND` for a missing root, `ABORTED` when `signal` fires (with
 *   the report so far in `details.report`).
 */
export async function gcLocal(options: LocalGcOptions): Promise<GcReport> {
  const checked = checkGcOptions(options);
  if (checked.owner !== undefined)
    throw new WsError('INVALID_ARGUMENT', 'Local workspaces carry no owner tag: give roots, not an owner', {
      details: { owner: checked.owner },
    });
  const ledger = new GcLedger(checked);
  await clearWriterLeftovers(ledger, checked.roots);
  return ledger.report();
}

/** The local backend's {@link Reaper} over fixed roots (a manager's base folder, say). */
export function localReaper(roots: readonly string[]): Reaper {
  return { gc: (options) => gcLocal({ ...options, roots }) };
}
