import { type ChildProcess, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { requireEngine } from '@ws/contract-tests';
import { type GcReport, isWsError, WorkspaceManager } from '@ws/core';
import { afterAll, describe, expect, it } from 'vitest';
import { BubblewrapWorkspace, bubblewrapProblem, bubblewrapWorkspaces, gcBwrap } from '../src/index.js';

const problem = requireEngine('bubblewrap', bubblewrapProblem());
if (problem) console.warn(`[bwrap-gc] skipped: ${problem}`);
const base = mkdtempSync(join(tmpdir(), 'ws-bwrap-gc-'));
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');
const children: ChildProcess[] = [];
afterAll(() => {
  // Only the hosts this file started.
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(base, { recursive: true, force: true });
});

const HOUR = 3_600_000;
const YEARS = 10 * 365 * 24 * HOUR;

/** Every folder and file of this file's hosts: their runtime folder, their temporary folder, their workdirs. */
function folders(name: string) {
  const root = join(base, name);
  const paths = { root, runtime: join(root, 'runtime'), tmp: join(root, 'tmp'), work: join(root, 'work') };
  for (const path of [paths.tmp, paths.work]) mkdirSync(path, { recursive: true });
  return paths;
}

/**
 * Opens a workspace in a node process of its own, with TMPDIR and the runtime folder in `paths`, and
 * waits for its gateway. `crash`: the process kills itself right after (a host that died with the
 * workspace open); otherwise it keeps it open until its stdin ends.
 */
async function host(
  paths: ReturnType<typeof folders>,
  workspace: Record<string, unknown>,
  crash: boolean,
): Promise<{ child: ChildProcess; pid: number }> {
  if (!existsSync(built)) throw new Error(`${built} is missing: build the package first (npm test does)`);
  const script = `
    const { BubblewrapWorkspace } = await import(${JSON.stringify(built)});
    const workspace = new BubblewrapWorkspace(${JSON.stringify({ ...workspace, hostRuntimeDir: paths.runtime })});
    await workspace.initialize();
    if ((await workspace.gatewayReady()) === undefined) throw new Error('no gateway');
    await workspace.getSandbox().writeFile('hello.txt', 'hello');
    console.log('ready');
    ${crash ? "process.kill(process.pid, 'SIGKILL');" : "process.stdin.resume(); process.stdin.once('end', () => workspace.close());"}
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, TMPDIR: paths.tmp },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  children.push(child);
  const exited = new Promise<string>((resolve) =>
    child.once('exit', (code, signal) => resolve(`exit ${signal ?? code}`)),
  );
  const ready = new Promise<string>((resolve) => {
    let out = '';
    child.stdout?.on('data', (chunk) => {
      out += chunk;
      if (out.includes('ready\n')) resolve('ready');
    });
  });
  expect(await Promise.race([ready, exited])).toBe('ready');
  if (crash) expect(await exited).toBe('exit SIGKILL');
  return { child, pid: child.pid as number };
}

/** Processes whose arguments name `path` (a gateway's bwrap binds its runtime folder's `shared`). */
function processesUsing(path: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').includes(path)) found.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/** The workspace cgroups of the host processes `pids` (one folder per controller on cgroup v1). */
function cgroupsOf(pids: readonly number[]): string[] {
  const parents = ['pids', 'memory', 'cpu', 'unified', '.'].map((hierarchy) =>
    join('/sys/fs/cgroup', hierarchy, 'ws'),
  );
  return [...new Set(parents.filter((parent) => existsSync(parent)))].flatMap((parent) =>
    readdirSync(parent)
      .filter((name) =>
        pids.some((pid) => new RegExp(`^[0-9a-f]{12}-[0-9a-f]{12}-${pid}-[0-9a-f]{6}$`).test(name)),
      )
      .map((name) => join(parent, name)),
  );
}

const byName = (report: GcReport) =>
  Object.fromEntries([
    ...report.removed.map((resource) => [resource.name, 'removed']),
    ...report.kept.map((resource) => [resource.name, resource.reason]),
  ]);

describe.skipIf(problem !== undefined)('bubblewrapWorkspaces', () => {
  it('is a factory a WorkspaceManager opens and closes workspaces with, each in <baseDir>/<id>', async () => {
    const paths = folders('factory');
    const manager = new WorkspaceManager({
      factory: bubblewrapWorkspaces({ baseDir: paths.work, hostRuntimeDir: paths.runtime, gateway: false }),
    });
    // The sandbox's /tmp goes to this process's temporary folder: here, one of this test's.
    const previous = process.env.TMPDIR;
    process.env.TMPDIR = paths.tmp;
    const lease = await manager.acquire({ workspaceId: 'alpha' }).finally(() => {
      if (previous === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = previous;
    });
    const result = await lease.workspace.getSandbox().exec(['sh', '-c', 'echo hi > note.txt && pwd']);
    expect(result.stdoutText).toBe('/workspace\n');
    expect(readFileSync(join(paths.work, 'alpha', 'note.txt'), 'utf8')).toBe('hi\n');
    expect(lease.workspace).toBeInstanceOf(BubblewrapWorkspace);
    expect(manager.has('alpha')).toBe(true);
    expect(readdirSync(paths.tmp).filter((entry) => entry.startsWith('ws-bwrap-'))).toHaveLength(1);
    lease.release();
    await manager.closeAll();
    expect(manager.stats()).toMatchObject({ open: 0, closing: 0 });
    expect(lease.workspace.state).toBe('closed');
    // The files stay; the sandbox's /tmp of the closed workspace is gone.
    expect(existsSync(join(paths.work, 'alpha', 'note.txt'))).toBe(true);
    expect(readdirSync(paths.tmp).filter((entry) => entry.startsWith('ws-bwrap-'))).toEqual([]);
    await manager[Symbol.asyncDispose]();
    expect(() => bubblewrapWorkspaces({ baseDir: '' })).toThrow(/baseDir/);
    expect(() =>
      bubblewrapWorkspaces({ baseDir: paths.work })('..', { signal: new AbortController().signal }),
    ).toThrow(/workspaceId/);
  });
});

describe.skipIf(problem !== undefined)('gcBwrap', () => {
  it('clears what killed hosts left (runtime folders, sandbox /tmp, temporary workdirs, writers), keeps live and young ones', async () => {
    const paths = folders('reaped');
    // Two hosts killed with their workspace open (one persistent, one on a temporary workdir), one alive.
    const crashed = await host(
      paths,
      { workspaceId: 'crashed', hostWorkdir: join(paths.work, 'crashed') },
      true,
    );
    const scratch = await host(paths, { workspaceId: 'scratch' }, true);
    const live = await host(paths, { workspaceId: 'live', hostWorkdir: join(paths.work, 'live') }, false);
    // Where the host lets the workspaces have cgroups (root), each left its own.
    const deadCgroups = cgroupsOf([crashed.pid, scratch.pid]);
    const liveCgroups = cgroupsOf([live.pid]);
    if (process.getuid?.() === 0) {
      expect(deadCgroups.length).toBeGreaterThanOrEqual(2);
      expect(liveCgroups.length).toBeGreaterThanOrEqual(1);
    }

    const runtimes = readdirSync(paths.runtime).filter((name) => name.startsWith('run-'));
    const temporaries = readdirSync(paths.tmp).filter((name) => name.startsWith('ws-bwrap-'));
    // One runtime folder per host; a /tmp per host and the scratch workspace's workdir.
    expect(runtimes).toHaveLength(3);
    expect(temporaries).toHaveLength(4);
    const isLive = (name: string) => name.includes(`-${live.pid}-`);
    const dead = [
      ...runtimes.filter((name) => !isLive(name)).map((name) => join(paths.runtime, name)),
      ...temporaries.filter((name) => !isLive(name)).map((name) => join(paths.tmp, name)),
      ...deadCgroups,
    ];
    const alive = [
      ...runtimes.filter(isLive).map((name) => join(paths.runtime, name)),
      ...temporaries.filter(isLive).map((name) => join(paths.tmp, name)),
      ...liveCgroups,
    ];
    expect(dead).toHaveLength(5 + deadCgroups.length);
    expect(alive).toHaveLength(2 + liveCgroups.length);
    // The gateways died with their hosts; their sockets stayed behind.
    for (const runtime of dead.filter((path) => path.startsWith(paths.runtime))) {
      expect(processesUsing(join(runtime, 'shared'))).toEqual([]);
      expect(readdirSync(join(runtime, 'sockets'))).toHaveLength(1);
    }
    const liveRuntime = alive.find((path) => path.startsWith(paths.runtime)) as string;
    expect(processesUsing(join(liveRuntime, 'shared')).length).toBeGreaterThan(0);

    // What killed writers left: a half-written bundle, an append of a dead writer in a workdir, and
    // a file named like a temporary one that is not.
    const bundle = readdirSync(join(paths.runtime, 'gateway')).find((name) =>
      name.endsWith('.mjs'),
    ) as string;
    const bundleTemporary = join(paths.runtime, 'gateway', `${bundle}.tmp-999999999-0badcafe`);
    const append = join(paths.work, 'crashed', 'sessions', 's1', '.append-999999999-abc-def');
    const lookalike = join(paths.work, 'crashed', 'notes.tmp');
    mkdirSync(dirname(append), { recursive: true });
    for (const path of [bundleTemporary, append, lookalike]) writeFileSync(path, 'left over');
    const aged = new Date(Date.now() - 2 * HOUR);
    for (const path of [...dead, bundleTemporary, append, lookalike]) utimesSync(path, aged, aged);
    for (const folder of dead.filter((path) => path.startsWith(base)))
      for (const entry of readdirSync(folder)) utimesSync(join(folder, entry), aged, aged);

    const options = { roots: [paths.work], hostRuntimeDir: paths.runtime, tmpDir: paths.tmp };
    const young = await gcBwrap({ ...options, olderThanMs: YEARS });
    expect(young.removed).toEqual([]);
    expect(byName(young)).toEqual(
      Object.fromEntries([
        ...[...dead, bundleTemporary, append].map((path) => [path, 'young']),
        ...alive.map((path) => [path, 'in-use']),
      ]),
    );

    const dry = await gcBwrap({ ...options, olderThanMs: HOUR, dryRun: true });
    expect(dry.dryRun).toBe(true);
    expect(dry.removed.map((resource) => resource.name).sort()).toEqual(
      [...dead, bundleTemporary, append].sort(),
    );
    for (const path of [...dead, bundleTemporary, append]) expect(existsSync(path), path).toBe(true);

    const report = await gcBwrap({ ...options, olderThanMs: HOUR });
    expect(report.dryRun).toBe(false);
    expect(byName(report)).toEqual(byName(dry));
    expect(
      Object.fromEntries(report.removed.map((resource) => [resource.name, resource.kind])),
    ).toMatchObject(
      Object.fromEntries([
        ...dead.map((path) => [
          path,
          path.startsWith(paths.runtime)
            ? 'runtime-folder'
            : path.startsWith(paths.tmp)
              ? 'temporary-folder'
              : 'cgroup',
        ]),
        [bundleTemporary, 'temporary-file'],
        [append, 'temporary-file'],
      ]),
    );
    for (const path of [...dead, bundleTemporary, append]) expect(existsSync(path), path).toBe(false);
    // The live host's folders, the workspaces' own files, the bundle and the look-alike stay.
    for (const path of [
      ...alive,
      join(paths.work, 'crashed', 'hello.txt'),
      join(paths.work, 'live', 'hello.txt'),
      join(paths.runtime, 'gateway', bundle),
      lookalike,
    ])
      expect(existsSync(path), path).toBe(true);

    // The live host still works, closes cleanly, and then leaves nothing to reap.
    live.child.stdin?.end();
    await new Promise((resolve) => live.child.once('exit', resolve));
    for (const path of alive) expect(existsSync(path), path).toBe(false);
    const after = await gcBwrap({ ...options, olderThanMs: 0 });
    expect(after.listed).toEqual([]);
    // The crashed workspace opens again on its files.
    const again = await BubblewrapWorkspace.open({
      workspaceId: 'crashed',
      hostWorkdir: join(paths.work, 'crashed'),
      hostRuntimeDir: paths.runtime,
      gateway: false,
    });
    try {
      expect((await again.getSandbox().exec(['cat', 'hello.txt'])).stdoutText).toBe('hello');
    } finally {
      await again.close();
    }
  }, 120_000);

  it('refuses an owner, a missing root, an empty folder and a bad age; an aborted signal throws ABORTED', async () => {
    const paths = folders('refused');
    for (const options of [
      { olderThanMs: 0, owner: 'someone' },
      { olderThanMs: 0, roots: [join(base, 'missing')] },
      { olderThanMs: 0, hostRuntimeDir: '' },
      { olderThanMs: -1 },
    ]) {
      const error = await gcBwrap({ tmpDir: paths.tmp, hostRuntimeDir: paths.runtime, ...options }).then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect(isWsError(error), JSON.stringify(options)).toBe(true);
    }
    const aborted = await gcBwrap({
      olderThanMs: 0,
      tmpDir: paths.tmp,
      hostRuntimeDir: paths.runtime,
      signal: AbortSignal.abort(),
    }).then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(isWsError(aborted, 'ABORTED')).toBe(true);
  });
});
