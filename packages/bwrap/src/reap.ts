import { lstat, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type GcOptions, type GcReport, WsError } from '@ws/core';
import {
  checkGcOptions,
  clearWriterLeftovers,
  fromErrno,
  GcLedger,
  type GcResource,
  processAlive,
  type ReapCandidate,
  type Reaper,
  reapCandidates,
  removeTree,
} from '@ws/core/backend';
import {
  cgroupCreated,
  cgroupScope,
  findCgroupLayout,
  listWorkspaceCgroups,
  removeCgroup,
} from './bwrap-cgroup.js';
import { defaultRuntimeDir } from './bwrap-provider.js';

/** Options of {@link gcBwrap}. */
export interface BwrapGcOptions extends GcOptions {
  /**
   * Host folders to clean of what killed writers left: workdirs, or folders holding workdirs
   * (searched through, links not followed). Default: none (only the runtime and temporary folders).
   */
  roots?: readonly string[] | undefined;
  /**
   * The `hostRuntimeDir` the workspaces were given. Default: theirs, `$XDG_RUNTIME_DIR/ws-bwrap-<uid>`
   * or the temp folder's.
   */
  hostRuntimeDir?: string | undefined;
  /**
   * The temporary folder of the processes that opened the workspaces (their `os.tmpdir()`, from
   * `TMPDIR`), where each keeps the sandbox's `/tmp` and the workdir of one without `hostWorkdir`.
   * Default: this process's.
   */
  tmpDir?: string | undefined;
}

/** A folder of one workspace's host process: `<prefix>-<12 hex of the id>-<kind>-<pid>-<6 characters>`. */
const TEMPORARY_FOLDER = /^ws-bwrap-[0-9a-f]{12}-(?:tmp|workdir)-(\d+)-[0-9A-Za-z]{6}$/;
const RUNTIME_FOLDER = /^run-[0-9a-f]{12}-(\d+)-[0-9A-Za-z]{6}$/;
/** A gateway bundle being written into the shared gateway folder. */
const BUNDLE_TEMPORARY = /^gateway-[0-9a-f]+\.mjs\.tmp-(\d+)-[0-9a-f]+$/;

/** When a folder or its direct entries last changed, in ms (a killed process stopped changing them). */
async function lastChanged(path: string, directory: boolean): Promise<number | undefined> {
  const info = await lstat(path).catch(() => undefined);
  if (!info) return undefined;
  let newest = info.mtimeMs;
  if (!directory || !info.isDirectory()) return newest;
  for (const name of await readdir(path).catch(() => [] as string[])) {
    const entry = await lstat(join(path, name)).catch(() => undefined);
    if (entry && entry.mtimeMs > newest) newest = entry.mtimeMs;
  }
  return newest;
}

/** The entries of `folder` whose name matches `pattern` (the writer's pid in group 1), as candidates to reap. */
async function matching(
  folder: string,
  pattern: RegExp,
  kind: GcResource['kind'],
  directory: boolean,
): Promise<ReapCandidate[]> {
  const found: ReapCandidate[] = [];
  for (const entry of await readdir(folder, { withFileTypes: true }).catch(() => [])) {
    const pid = pattern.exec(entry.name)?.[1];
    if (pid === undefined || (directory ? !entry.isDirectory() : !entry.isFile())) continue;
    const path = join(folder, entry.name);
    const changed = await lastChanged(path, directory);
    // Gone meanwhile: its process closed the workspace.
    if (changed === undefined) continue;
    found.push({
      kind,
      name: path,
      idleSince: changed,
      // Its process is alive: the workspace is open (leased or not).
      probe: async () => ({ inUse: processAlive(Number(pid)) }),
      // The sandbox could write in a /tmp or workdir being removed: no link in it is followed.
      remove: () =>
        removeTree(path).catch((error: unknown) => {
          throw fromErrno(error, `Removing ${path} failed`, { path });
        }),
    });
  }
  return found;
}

/**
 * The cgroups of the workspaces of one runtime folder (`<hierarchy>/ws/<12 hex of the folder>-<12 hex
 * of the id>-<pid>-<6 hex>`, one per controller on cgroup v1): in use while the host process that made
 * it lives; removing one kills what is left in it.
 */
async function cgroupCandidates(runtimeDir: string): Promise<ReapCandidate[]> {
  const found = await findCgroupLayout();
  if ('problem' in found) return [];
  const candidates: ReapCandidate[] = [];
  const scope = cgroupScope(runtimeDir);
  for (const cgroup of await listWorkspaceCgroups(Object.values(found.layout.parents))) {
    if (cgroup.scope !== scope) continue;
    const created = await cgroupCreated(cgroup.folder);
    if (created === undefined) continue;
    candidates.push({
      kind: 'cgroup',
      name: cgroup.folder,
      idleSince: created,
      probe: async () => ({ inUse: processAlive(cgroup.ownerPid) }),
      remove: () =>
        removeCgroup(cgroup.folder).catch((error: unknown) => {
          throw fromErrno(error, `Removing the cgroup ${cgroup.folder} failed`, { path: cgroup.folder });
        }),
    });
  }
  return candidates;
}

/**
 * Reaps what bubblewrap workspaces left on this host when their process was killed before `close()`:
 * - runtime folders (`<hostRuntimeDir>/run-*`) with the gateway's sockets: a gateway dies with the
 *   process that started it (its bwrap runs with `--die-with-parent`), its folder stays;
 * - half-written gateway bundles in `<hostRuntimeDir>/gateway`;
 * - the sandboxes' private `/tmp` folders and the temporary workdirs of workspaces without a
 *   `hostWorkdir` (`<tmpDir>/ws-bwrap-*`);
 * - the workspaces' cgroups (`/sys/fs/cgroup/…/ws/*`, kind `cgroup`), with any process left in them;
 * - under `roots`, what killed writers left in workdirs, as `gcLocal` clears it (`.ws-*.tmp`,
 *   `*.tmp-*`, `.append-*`, a stale `context.jsonl.lock`, half-copied skill folders).
 *
 * Every folder and file names the host process that made it: while that process lives, it is in use
 * (an open workspace, leased or not, is never reaped); otherwise it goes once unchanged for
 * `olderThanMs`. A workspace's own files are never touched. Host folders carry no owner tag, so
 * `owner` is refused.
 *
 * @throws WsError `INVALID_ARGUMENT` for bad options (an `owner` among them), `NOT_FOUND` for a missing
 *   root, `ABORTED` when `signal` fires (with the report so far in `details.report`).
 */
export async function gcBwrap(options: BwrapGcOptions): Promise<GcReport> {
  const checked = checkGcOptions(options);
  if (checked.owner !== undefined)
    throw new WsError(
      'INVALID_ARGUMENT',
      'Bubblewrap workspaces carry no owner tag: give roots and folders, not an owner',
      { details: { owner: checked.owner } },
    );
  for (const [name, value] of [
    ['hostRuntimeDir', checked.hostRuntimeDir],
    ['tmpDir', checked.tmpDir],
  ] as const)
    if (value !== undefined && (typeof value !== 'string' || value === ''))
      throw new WsError('INVALID_ARGUMENT', `${name} must be a host folder, not ${JSON.stringify(value)}`);
  const ledger = new GcLedger(checked);
  // The roots are checked (and cleaned) first: bad options fail before anything else is removed.
  if (checked.roots !== undefined) await clearWriterLeftovers(ledger, checked.roots);
  const runtimeDir = resolve(checked.hostRuntimeDir ?? defaultRuntimeDir());
  const candidates = [
    ...(await matching(runtimeDir, RUNTIME_FOLDER, 'runtime-folder', true)),
    ...(await matching(join(runtimeDir, 'gateway'), BUNDLE_TEMPORARY, 'temporary-file', false)),
    ...(await matching(resolve(checked.tmpDir ?? tmpdir()), TEMPORARY_FOLDER, 'temporary-folder', true)),
    ...(await cgroupCandidates(runtimeDir)),
  ];
  await reapCandidates(ledger, candidates);
  return ledger.report();
}

/** The bubblewrap backend's {@link Reaper}, with its roots and folders fixed once (a manager's baseDir). */
export function bwrapReaper(defaults: Omit<BwrapGcOptions, keyof GcOptions> = {}): Reaper {
  return { gc: (options) => gcBwrap({ ...defaults, ...options }) };
}
