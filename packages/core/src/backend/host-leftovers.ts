import type { Dirent } from 'node:fs';
import { lstat, readdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fromErrno, isWsError, WsError } from '../contracts/errors.js';
import type { GcLedger } from '../manager/gc.js';
import { processAlive } from './host-paths.js';

/**
 * What writers leave while they work and remove when they finish; found after a killed one. A pid in
 * the name is the writer's host process (the engine runs on the host whatever the sandbox): while it
 * lives, the entry is in use.
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

function leftover(entry: Dirent): { pid: number | undefined } | undefined {
  for (const { pattern, directory } of LEFTOVERS) {
    if (directory ? !entry.isDirectory() : !entry.isFile()) continue;
    const match = pattern.exec(entry.name);
    if (match) return { pid: match[1] === undefined ? undefined : Number(match[1]) };
  }
  return undefined;
}

/**
 * Clears what killed writers left in workdirs on this host, for a reaper: temporary files of
 * whole-file writes (`.ws-*.tmp`), of offloaded context (`*.tmp-*`, `.append-*`, a stale
 * `context.jsonl.lock`) and half-copied skill folders, anywhere under `roots` (searched through, links
 * not followed), once unmodified for the ledger's `olderThanMs` and their writer (when the name says
 * which) is no longer running. Each is recorded in `ledger` as `temporary-file` (removed, or kept
 * `in-use`, `young` or `failed`); a dry run removes nothing. A workspace's own files are never touched.
 * The roots are checked before anything is removed.
 *
 * @throws WsError `INVALID_ARGUMENT` when `roots` is not a list of paths, `NOT_FOUND` (or another file
 *   error) for a root that cannot be read, `NOT_A_DIRECTORY` for a root that is not a folder, `ABORTED`
 *   when the ledger's signal fires (with the report so far in `details.report`).
 */
export async function clearWriterLeftovers(
  ledger: GcLedger,
  roots: readonly string[],
  now: number = Date.now(),
): Promise<void> {
  if (!Array.isArray(roots) || roots.some((root) => typeof root !== 'string' || root === ''))
    throw new WsError('INVALID_ARGUMENT', 'roots must be a list of host folders');
  const resolved = roots.map((root) => resolve(root));
  for (const root of resolved) {
    const info = await lstat(root).catch((error: unknown) => {
      throw fromErrno(error, `The root ${root} cannot be read`, { path: root });
    });
    if (!info.isDirectory())
      throw new WsError('NOT_A_DIRECTORY', `The root ${root} is not a folder`, { details: { path: root } });
  }
  const { olderThanMs, dryRun } = ledger.options;
  const pending = [...resolved];
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
      else if (resource.idleMs < olderThanMs) ledger.keep(resource, 'young');
      else if (dryRun === true) ledger.remove(resource);
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
}
