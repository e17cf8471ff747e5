import type { Dirent } from 'node:fs';
import { lstat } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import { fromErrno, WsError } from '../contracts/errors.js';
import type { GcLedger } from '../manager/gc.js';
import { HeldFolder } from './held-folder.js';
import { processAlive } from './host-paths.js';
import { reapCandidates } from './reap-loop.js';

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
export async function clearWriterLeftovers(ledger: GcLedger, roots: readonly string[]): Promise<void> {
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
  // Each folder is held open while it is searched, and reached from its parent without following a
  // link: the sandbox may swap a folder for a link to the host's files at any moment.
  const search = async (folder: HeldFolder): Promise<void> => {
    ledger.throwIfAborted();
    const entries = await folder.list().catch(() => [] as Dirent[]);
    for (const entry of entries) {
      const found = leftover(entry);
      if (!found) {
        if (!entry.isDirectory()) continue;
        const child = await folder.child(entry.name).catch(() => undefined);
        if (!child) continue;
        try {
          await search(child);
        } finally {
          await child.close();
        }
        continue;
      }
      const path = join(folder.path, entry.name);
      const modified = await lstat(folder.entry(entry.name)).then(
        (info) => info.mtimeMs,
        () => undefined,
      );
      // Gone meanwhile: its writer finished.
      if (modified === undefined) continue;
      await reapCandidates(ledger, [
        {
          kind: 'temporary-file',
          name: path,
          idleSince: modified,
          ...(found.pid === undefined
            ? {}
            : { probe: async () => ({ inUse: processAlive(found.pid as number) }) }),
          remove: () =>
            folder.remove(entry.name).catch((error: unknown) => {
              throw fromErrno(error, `Removing ${path} failed`, { path });
            }),
        },
      ]);
    }
  };
  // A root inside another is searched as part of it.
  const outermost = [...new Set(resolved)].filter(
    (root) =>
      !resolved.some((other) => other !== root && root.startsWith(other.endsWith(sep) ? other : other + sep)),
  );
  for (const root of outermost) {
    const folder = await HeldFolder.open(root);
    if (!folder) continue;
    try {
      await search(folder);
    } finally {
      await folder.close();
    }
  }
}
