import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants, readFileSync } from 'node:fs';
import { access, mkdir, readdir, readFile, rmdir, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { WorkspaceLimits } from '@ws/core';
import { DEFAULT_PIDS_LIMIT, hostTag, processAlive } from '@ws/core/backend';

/** The cgroup controllers a workspace's limits use. */
export type CgroupController = 'pids' | 'memory' | 'cpu';

const CONTROLLERS: readonly CgroupController[] = ['pids', 'memory', 'cpu'];

/** The folder under each hierarchy that holds the workspaces' cgroups. */
const PARENT = 'ws';

/** Where this host keeps cgroups for workspaces: `<hierarchy>/ws` of each controller it has. */
export interface CgroupLayout {
  /** 2: one unified hierarchy (`pids.max`, `memory.max`, `cpu.max`); 1: one hierarchy per controller. */
  readonly version: 1 | 2;
  /** The `ws` folder of each controller found (on cgroup v2 the same folder for all). */
  readonly parents: Readonly<Partial<Record<CgroupController, string>>>;
}

/** A `<12 hex of the id>-<pid of the host process>-<6 hex>` cgroup name. */
const CGROUP_NAME = /^([0-9a-f]{12})-([0-9a-f]{12})-(\d+)-[0-9a-f]{6}$/;

/** `/proc/self/mounts` escapes spaces and the like in mount points as `\040`. */
function unescapeMount(path: string): string {
  return path.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

/**
 * The cgroup hierarchies of a mount table (`/proc/self/mounts`): the unified one when it has any of
 * the controllers (a cgroup v2 host, or a hybrid one whose v2 hierarchy was given them), else the
 * cgroup v1 hierarchy of each. `controllersOf` reads a v2 hierarchy's `cgroup.controllers`.
 */
export function parseCgroupMounts(
  mounts: string,
  controllersOf: (mountPoint: string) => readonly string[],
): { version: 1 | 2; mounts: Partial<Record<CgroupController, string>>; readOnly: string[] } | undefined {
  const v1: Partial<Record<CgroupController, string>> = {};
  const readOnly: string[] = [];
  let unified: { point: string; controllers: readonly string[]; readOnly: boolean } | undefined;
  for (const line of mounts.split('\n')) {
    const [, rawPoint, type, options = ''] = line.split(' ');
    if (rawPoint === undefined || (type !== 'cgroup' && type !== 'cgroup2')) continue;
    const point = unescapeMount(rawPoint);
    const flags = options.split(',');
    const isReadOnly = flags.includes('ro');
    if (type === 'cgroup2') {
      if (!unified) unified = { point, controllers: controllersOf(point), readOnly: isReadOnly };
      continue;
    }
    for (const controller of CONTROLLERS)
      if (flags.includes(controller) && v1[controller] === undefined) {
        v1[controller] = point;
        if (isReadOnly) readOnly.push(point);
      }
  }
  if (unified && CONTROLLERS.some((controller) => unified.controllers.includes(controller))) {
    const found: Partial<Record<CgroupController, string>> = {};
    for (const controller of CONTROLLERS)
      if (unified.controllers.includes(controller)) found[controller] = unified.point;
    return { version: 2, mounts: found, readOnly: unified.readOnly ? [unified.point] : [] };
  }
  if (Object.keys(v1).length === 0) return undefined;
  return { version: 1, mounts: v1, readOnly };
}

function readControllers(mountPoint: string): string[] {
  try {
    return readFileSync(join(mountPoint, 'cgroup.controllers'), 'utf8').trim().split(/\s+/);
  } catch {
    return [];
  }
}

const HOW_TO =
  'run the host process as root, or delegate a cgroup to its user (create <hierarchy>/ws, give it to the user, and on cgroup v2 enable the pids, memory and cpu controllers in its cgroup.subtree_control)';

/**
 * Where this host lets workspaces have cgroups, or why it does not: no cgroup hierarchy, one mounted
 * read-only (a container's), or a user that is not root and was delegated no `ws` folder.
 */
export async function findCgroupLayout(
  mounts = '/proc/self/mounts',
): Promise<{ layout: CgroupLayout } | { problem: string }> {
  if (process.platform !== 'linux') return { problem: 'cgroups need Linux' };
  const table = await readFile(mounts, 'utf8').catch(() => '');
  const found = parseCgroupMounts(table, readControllers);
  if (!found) return { problem: `no cgroup hierarchy is mounted; ${HOW_TO}` };
  if (found.readOnly.length > 0)
    return {
      problem: `the cgroup hierarchy ${found.readOnly.join(', ')} is mounted read-only here (as in most containers); run the host process where it is writable, or give its container a writable cgroup`,
    };
  const parents: Partial<Record<CgroupController, string>> = {};
  for (const [controller, point] of Object.entries(found.mounts) as [CgroupController, string][])
    parents[controller] = join(point, PARENT);
  // Not root: only the controllers whose `ws` folder was delegated to this user.
  if (process.getuid?.() !== 0) {
    for (const [controller, parent] of Object.entries(parents) as [CgroupController, string][])
      if (
        !(await access(parent, constants.W_OK).then(
          () => true,
          () => false,
        ))
      )
        delete parents[controller];
    if (Object.keys(parents).length === 0)
      return { problem: `the host process is not root and no cgroup was delegated to it; ${HOW_TO}` };
  }
  return { layout: { version: found.version, parents } };
}

/**
 * The controllers a workspace's limits need: pids when asked or when the host has it (the default
 * process limit), memory and cpu when asked.
 */
export function neededControllers(layout: CgroupLayout, limits: WorkspaceLimits): CgroupController[] {
  return [
    ...(limits.pids !== undefined || layout.parents.pids !== undefined ? (['pids'] as const) : []),
    ...(limits.memoryMiB !== undefined ? (['memory'] as const) : []),
    ...(limits.cpus !== undefined ? (['cpu'] as const) : []),
  ];
}

/** Each file of a cgroup to write, in order, with its value. */
function limitFiles(
  version: 1 | 2,
  controllers: readonly CgroupController[],
  limits: WorkspaceLimits,
): [CgroupController, string, string][] {
  const files: [CgroupController, string, string][] = controllers.includes('pids')
    ? [['pids', 'pids.max', String(limits.pids ?? DEFAULT_PIDS_LIMIT)]]
    : [];
  const { memoryMiB, cpus } = limits;
  const period = 100_000;
  const quota = cpus === undefined ? 0 : Math.max(1_000, Math.round(cpus * period));
  if (version === 1) {
    if (memoryMiB !== undefined) {
      const bytes = String(memoryMiB * 1024 * 1024);
      // memsw (memory and swap) is set after the memory limit, which it may not be below; it exists
      // only where swap is accounted.
      files.push(
        ['memory', 'memory.limit_in_bytes', bytes],
        ['memory', 'memory.memsw.limit_in_bytes', bytes],
      );
    }
    if (cpus !== undefined)
      files.push(['cpu', 'cpu.cfs_period_us', String(period)], ['cpu', 'cpu.cfs_quota_us', String(quota)]);
  } else {
    if (memoryMiB !== undefined)
      files.push(
        ['memory', 'memory.max', String(memoryMiB * 1024 * 1024)],
        ['memory', 'memory.swap.max', '0'],
      );
    if (cpus !== undefined) files.push(['cpu', 'cpu.max', `${quota} ${period}`]);
  }
  return files;
}

/** Files that a kernel without swap accounting does not have; everything else must be written. */
const OPTIONAL_FILES = new Set(['memory.memsw.limit_in_bytes', 'memory.swap.max']);

/** The parents (by controller) a process of this host process was moved into a cgroup under. */
const joinableParents = new Set<string>();

/** Makes `<hierarchy>/ws`, and on cgroup v2 hands the controllers down to the workspaces under it. */
async function ensureParent(layout: CgroupLayout, controllers: readonly CgroupController[]): Promise<void> {
  for (const parent of new Set(controllers.map((controller) => layout.parents[controller] as string)))
    await mkdir(parent).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
  if (layout.version !== 2) return;
  const parent = layout.parents[controllers[0] as CgroupController] as string;
  for (const folder of [join(parent, '..'), parent]) {
    const enabled = (await readFile(join(folder, 'cgroup.subtree_control'), 'utf8').catch(() => '')).split(
      /\s+/,
    );
    const missing = controllers.filter((controller) => !enabled.includes(controller));
    if (missing.length > 0)
      await writeFile(join(folder, 'cgroup.subtree_control'), missing.map((name) => `+${name}`).join(' '));
  }
}

/** A JOIN_SCRIPT that failed to join reports this on stderr and exits with {@link JOIN_FAILED}. */
export const JOIN_FAILURE = 'ws-bwrap: cannot join the cgroup';
/** The exit code of a launch that could not join its cgroup. */
export const JOIN_FAILED = 125;

// Moves the shell into each cgroup named before `--`, then becomes the command after it: the command
// (bwrap) starts inside the cgroups and every process it forks is born there.
const JOIN_SCRIPT = `while [ "$1" != -- ]; do echo $$ > "$1" || { echo "${JOIN_FAILURE} $1" >&2; exit ${JOIN_FAILED}; }; shift; done; shift; exec "$@"`;

/** `argv` started inside the cgroups whose `cgroup.procs` files are `procs` (as is when there are none). */
export function joinCgroupArgv(procs: readonly string[], argv: readonly string[]): string[] {
  if (procs.length === 0) return [...argv];
  return ['/bin/sh', '-c', JOIN_SCRIPT, 'ws-bwrap-join', ...procs, '--', ...argv];
}

const REMOVE_WAIT_MS = 5_000;

/**
 * Removes a workspace's cgroup folder once its processes are gone: waits for them, then kills what is
 * left (every process in it is that workspace's); resolves when it is gone already.
 */
export async function removeCgroup(folder: string): Promise<void> {
  const deadline = Date.now() + REMOVE_WAIT_MS;
  for (let attempt = 0; ; attempt++) {
    try {
      await rmdir(folder);
      return;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (code !== 'EBUSY' || Date.now() > deadline) throw error;
    }
    // Still holding processes (a sandbox dying, or one left running): from the second look on, every
    // one of them is killed; they are all this workspace's.
    if (attempt >= 1) await killMembers(folder);
    await new Promise((resolve) => setTimeout(resolve, Math.min(20 * 2 ** attempt, 200)));
  }
}

async function killMembers(folder: string): Promise<void> {
  // cgroup v2 kills a whole cgroup at once, new forks included.
  if (
    await writeFile(join(folder, 'cgroup.kill'), '1').then(
      () => true,
      () => false,
    )
  )
    return;
  const text = await readFile(join(folder, 'cgroup.procs'), 'utf8').catch(() => '');
  for (const pid of text.split('\n').filter(Boolean))
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // Gone meanwhile.
    }
}

/** The `oom_kill` count of a memory cgroup's event file. */
function oomKillsIn(text: string): number | undefined {
  const match = /^oom_kill (\d+)$/m.exec(text);
  return match ? Number(match[1]) : undefined;
}

/**
 * One workspace's cgroup (one folder per controller on cgroup v1): created with its limits at open,
 * joined by every bwrap the workspace starts, removed at close.
 */
export class WorkspaceCgroup {
  private constructor(
    private readonly layout: CgroupLayout,
    /** The folder of each controller used. */
    private readonly folders: Readonly<Partial<Record<CgroupController, string>>>,
    /** Whether a memory limit was set (then the kill count means something). */
    private readonly memoryLimited: boolean,
  ) {}

  /**
   * Creates the cgroup of `workspaceId` with `limits` (pids: {@link DEFAULT_PIDS_LIMIT} when not
   * given), first removing those of the same id whose host process is gone. Leaves nothing when it fails.
   */
  static async create(
    layout: CgroupLayout,
    workspaceId: string,
    limits: WorkspaceLimits,
    scope: string,
  ): Promise<WorkspaceCgroup> {
    const controllers = neededControllers(layout, limits);
    if (controllers.length === 0)
      throw new Error('this host has none of the pids, memory and cpu controllers');
    const missing = controllers.filter((controller) => layout.parents[controller] === undefined);
    if (missing.length > 0) throw new Error(`this host has no ${missing.join(', ')} cgroup controller`);
    await ensureParent(layout, controllers);
    await sweepDead(layout, scope, hostTag(workspaceId));
    const name = `${scope}-${hostTag(workspaceId)}-${process.pid}-${randomBytes(3).toString('hex')}`;
    const folders: Partial<Record<CgroupController, string>> = {};
    for (const controller of controllers)
      folders[controller] = join(layout.parents[controller] as string, name);
    const cgroup = new WorkspaceCgroup(layout, folders, limits.memoryMiB !== undefined);
    try {
      for (const folder of new Set(Object.values(folders))) await mkdir(folder);
      for (const [controller, file, value] of limitFiles(layout.version, controllers, limits))
        await writeFile(join(folders[controller] as string, file), value).catch(
          (error: NodeJS.ErrnoException) => {
            if (!(error.code === 'ENOENT' && OPTIONAL_FILES.has(file))) throw error;
          },
        );
      // The whole path once per parent, before any sandbox depends on it (a delegation can allow
      // creating a cgroup but not moving processes into it).
      const parents = JSON.stringify(controllers.map((controller) => layout.parents[controller]));
      if (!joinableParents.has(parents)) {
        await promisify(execFile)('/bin/sh', joinCgroupArgv(cgroup.procs, ['true']).slice(1), {
          timeout: 10_000,
        }).catch((error: { stderr?: string; message: string }) => {
          throw new Error((error.stderr || error.message).trim());
        });
        joinableParents.add(parents);
      }
    } catch (error) {
      await cgroup.remove().catch(() => {});
      throw error;
    }
    return cgroup;
  }

  /** Whether the cgroup holds a process limit (the host has the pids controller). */
  get limitsProcesses(): boolean {
    return this.folders.pids !== undefined;
  }

  /** The `cgroup.procs` files a launch writes its pid to. */
  get procs(): string[] {
    return [...new Set(Object.values(this.folders))].map((folder) => join(folder, 'cgroup.procs'));
  }

  /**
   * How many processes the memory limit killed so far, read on the host (the sandbox sees no cgroup
   * file); undefined without a memory limit or where the kernel does not count.
   */
  async oomKills(): Promise<number | undefined> {
    const folder = this.folders.memory;
    if (!this.memoryLimited || folder === undefined) return undefined;
    const file = this.layout.version === 1 ? 'memory.oom_control' : 'memory.events';
    return oomKillsIn(await readFile(join(folder, file), 'utf8'));
  }

  /** Removes the cgroup, killing any process still in it; idempotent. */
  async remove(): Promise<void> {
    const failures: unknown[] = [];
    for (const folder of new Set(Object.values(this.folders)))
      await removeCgroup(folder).catch((error: unknown) => failures.push(error));
    if (failures.length > 0) throw failures[0];
  }
}

/** A workspace cgroup found under a `ws` folder: its folder and the pid of the host process that made it. */
export interface FoundCgroup {
  readonly folder: string;
  /** The tag of the runtime folder of the workspace (see {@link cgroupScope}). */
  readonly scope: string;
  readonly tag: string;
  readonly ownerPid: number;
}

/** The workspaces' cgroups under `parents` (every controller's `ws` folder). */
export async function listWorkspaceCgroups(parents: readonly string[]): Promise<FoundCgroup[]> {
  const found: FoundCgroup[] = [];
  for (const parent of new Set(parents))
    for (const entry of await readdir(parent, { withFileTypes: true }).catch(() => [])) {
      const match = CGROUP_NAME.exec(entry.name);
      if (!match || !entry.isDirectory()) continue;
      found.push({
        folder: join(parent, entry.name),
        scope: match[1] as string,
        tag: match[2] as string,
        ownerPid: Number(match[3]),
      });
    }
  return found;
}

/** When a cgroup folder was made, in ms since the epoch (its folder's change time). */
export async function cgroupCreated(folder: string): Promise<number | undefined> {
  return (await stat(folder).catch(() => undefined))?.mtimeMs;
}

/**
 * The tag of a runtime folder that starts the names of its workspaces' cgroups: a reaper given that
 * folder sees those cgroups only, as it sees only that folder's runtime folders.
 */
export function cgroupScope(runtimeDir: string): string {
  return hostTag(resolve(runtimeDir));
}

/** Removes this workspace id's cgroups (of the same runtime folder) whose host process is gone. */
async function sweepDead(layout: CgroupLayout, scope: string, tag: string): Promise<void> {
  for (const found of await listWorkspaceCgroups(Object.values(layout.parents)))
    if (
      found.scope === scope &&
      found.tag === tag &&
      found.ownerPid !== process.pid &&
      !processAlive(found.ownerPid)
    )
      await removeCgroup(found.folder).catch(() => {});
}
