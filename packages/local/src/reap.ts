import type { Dirent } from 'node:fs';
import { lstat, readdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { type GcOptions, type GcReport, isWsError, WsError } from '@ws/core';
import { checkGcOptions, fromErrno, GcLedger, type Reaper } from '@ws/core/backend';

/** Options of {@link gcLocal}. */
export interface LocalGcOptions extends GcOptions {
  /** Host folders to clean: workdirs, or folders holding workdirs (searched through, links not followed). */
  roots: readonly string[];
}

/**
 * What writers leave while they work and remove when they finish; found after a killed one. A pid in
 * the name is the writer's host process: while it lives, the entry is in use.
 */
const LEFTOVERS: readonly { pattern: RegExp; directory: boolean }[] = [
  // A file written whole then renamed into place (Write, Edit, offloads, .mcp).
  { pattern: /^\.ws-[0-9A-Za-z]{6,}\.tmp$/, directory: false },
  // Offloaded context: the rebuilt file before its rename, and the batch being appended.
  { pattern: /\.tmp-(\d+)-[0-9a-z]+-[0-9a-z]+$/, directory: false },
  { pattern: /^\.append-(\d+)-[0-9a-z]+-[0-9a-z]+$/, directory: false },
  // The lock of an append where flock is missing.
  { pattern: /^context\.jsonl\.lock$/, directory: true },
  // A skill partition being copied from the seed, and a skill being installed.
  { pattern: /\.equipping-(\d+)-[0-9a-z]+$/, directory: true },
  { pattern: /^\.skill-staging-(\d+)-[0-9a-z]+$/, directory: true },
];

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function leftover(entry: Dirent): { pid: number | undefined } | undefined {
  for (const { pattern, directory } of LEFTOVERS) {
    if (directory ? !entry.isDirectory() : !entry.isFile()) continue;
    const match = pattern.exec(entry.name);
    if (match) return { pid: match[1] === undefined ? undefined : Number(match[1]) };
  }
  return undefined;
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
  const now = Date.now();
  const checked = checkGcOptions(options);
  if (checked.owner !== undefined)
    throw new WsError('INVALID_ARGUMENT', 'Local workspaces carry no owner tag: give roots, not an owner', {
      details: { owner: checked.owner },
    });
  if (!Array.isArray(checked.roots) || checked.roots.some((root) => typeof root !== 'string' || root === ''))
    throw new WsError('INVALID_ARGUMENT', 'roots must be a list of host folders');
  const roots = checked.roots.map((root) => resolve(root));
  for (const root of roots) {
    const info = await lstat(root).catch((error: unknown) => {
      throw fromErrno(error, `The root ${root} cannot be read`, { path: root });
    });
    if (!info.isDirectory())
      throw new WsError('NOT_A_DIRECTORY', `The root ${root} is not a folder`, { details: { path: root } });
  }
  const ledger = new GcLedger(checked);
  const pending = [...roots];
  const seen = new Set<string>();
  while (pending.length > 0) {
    ledger.throwIfAborted();
    const folder = pending.pop() as string;
    if (seen.has(folder)) continue;
    seen.add(folder);
    const entries = await readdir(folder, { withFileTypes: true }).catch(() => [] as Dirent[]);
    for (const entry of entries) {
      const path = join(folder, entry.name);
      const found = leftover(entry);
      if (!found) {
        if (entry.isDirectory()) pending.push(path);
        continue;
      }
      const modified = await lstat(path).then(
        (info) => info.mtimeMs,
        () => undefined,
      );
      // Gone meanwhile: its writer finished.
      if (modified === undefined) continue;
      const resource = { kind: 'temporary-file', name: path, idleMs: Math.max(0, now - modified) } as const;
      if (found.pid !== undefined && processAlive(found.pid)) ledger.keep(resource, 'in-use');
      else if (resource.idleMs < checked.olderThanMs) ledger.keep(resource, 'young');
      else if (checked.dryRun) ledger.remove(resource);
      else {
        try {
          await rm(path, { recursive: entry.isDirectory(), force: true });
          ledger.remove(resource);
        } catch (error) {
          ledger.keep(
            resource,
            'failed',
            isWsError(error) ? error : fromErrno(error, `Removing ${path} failed`, { path }),
          );
        }
      }
    }
  }
  return ledger.report();
}

/** The local backend's {@link Reaper} over fixed roots (a manager's base folder, say). */
export function localReaper(roots: readonly string[]): Reaper {
  return { gc: (options) => gcLocal({ ...options, roots }) };
}
