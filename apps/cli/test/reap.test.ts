import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bubblewrapProblem } from '@ws/bwrap';
import { requireEngine } from '@ws/contract-tests';
import { generateId, WorkspaceManager } from '@ws/core';
import { DEFAULT_DOCKER_IMAGE, dockerProblem, removeOwnedContainers } from '@ws/docker';
import { e2bWorkspaces, killOwnedSandboxes } from '@ws/e2b';
import { EMULATOR_BIN, type EmulatorProcess, launchEmulator } from '@ws/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, dockerUnavailable, runWs, startHttpServer } from './helpers.js';

beforeAll(assertBuilt);

interface Listed {
  backend: string;
  owner?: string;
  resources: {
    kind: string;
    name: string;
    workspaceId?: string;
    owner?: string;
    userId?: string;
    agentId?: string;
    idleMs: number;
    inUse: boolean;
  }[];
}

interface Reaped {
  backend: string;
  dryRun: boolean;
  olderThanMs: number;
  removed: { kind: string; name: string; workspaceId?: string }[];
  kept: { kind: string; name: string; workspaceId?: string; reason: string }[];
}

/** Runs `ws <args> --json` and parses its one line. */
function json<T>(args: string[], env: Record<string, string> = {}): T {
  const result = runWs([...args, '--json'], env);
  expect(result.status, result.stderr).toBe(0);
  expect(result.stdout.trimEnd().split('\n')).toHaveLength(1);
  return JSON.parse(result.stdout) as T;
}

/** A pid that is surely not running: a process that already exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid as number;
}

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'ws-cli-reap-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe('ws ls / ws gc --backend local', () => {
  it("lists killed writers' leftovers under --root, and gc removes only the idle ones old enough", async () => {
    const root = join(scratch, 'local');
    // A real workspace made by ws, then what writers killed mid-way leave in it.
    expect(
      runWs(['exec', '--workdir', join(root, 'w1'), '--', 'sh', '-c', 'echo hi > notes.txt']).status,
    ).toBe(0);
    await mkdir(join(root, 'w1', 'sessions', 's1'), { recursive: true });
    const old = join(root, 'w1', 'sessions', 's1', `.append-${await deadPid()}-a1-b2`);
    const fresh = join(root, 'w1', '.ws-Abc123.tmp');
    const busy = join(root, 'w1', 'sessions', 's1', `context.jsonl.tmp-${process.pid}-c3-d4`);
    for (const path of [old, fresh, busy]) await writeFile(path, 'partial');
    const threeHoursAgo = new Date(Date.now() - 3 * 3_600_000);
    await utimes(old, threeHoursAgo, threeHoursAgo);

    const listed = json<Listed>(['ls', '--backend', 'local', '--root', root]);
    expect(listed.backend).toBe('local');
    const byName = Object.fromEntries(listed.resources.map((item) => [item.name, item]));
    expect(Object.keys(byName).sort()).toEqual([fresh, old, busy].sort());
    expect(byName[busy]?.inUse).toBe(true);
    expect(byName[old]).toMatchObject({ kind: 'temporary-file', inUse: false });
    expect(byName[old]?.idleMs).toBeGreaterThanOrEqual(3 * 3_600_000 - 60_000);

    const table = runWs(['ls', '--root', root]);
    expect(table.status).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(
      /^KIND\s+NAME\s+WORKSPACE\s+OWNER\s+USER\s+AGENT\s+IDLE\s+STATE$/,
    );
    expect(table.stdout).toMatch(new RegExp(`${busy.replace(/[.]/g, '\\.')}.*in use`));
    expect(table.stdout).toMatch(/\s3h\s+idle/);

    const dry = json<Reaped>(['gc', '--root', root, '--dry-run', '--older-than', '1h']);
    expect(dry.dryRun).toBe(true);
    expect(dry.removed.map((item) => item.name)).toEqual([old]);
    expect(existsSync(old)).toBe(true);

    // The default age is 2h: only the three-hour-old leftover of a dead writer goes.
    const reaped = json<Reaped>(['gc', '--workdir', join(root, 'w1')]);
    expect(reaped).toMatchObject({ dryRun: false, olderThanMs: 2 * 3_600_000 });
    expect(reaped.removed.map((item) => item.name)).toEqual([old]);
    expect(Object.fromEntries(reaped.kept.map((item) => [item.name, item.reason]))).toEqual({
      [fresh]: 'young',
      [busy]: 'in-use',
    });
    expect(existsSync(old)).toBe(false);
    expect(existsSync(fresh) && existsSync(busy)).toBe(true);
    expect(existsSync(join(root, 'w1', 'notes.txt'))).toBe(true);

    // Any age: the fresh one goes too, never the one whose writer (this process) is alive.
    const human = runWs(['gc', '--root', root, '--older-than', '0']);
    expect(human.status).toBe(0);
    expect(human.stdout).toMatch(/^ACTION\s+KIND/);
    expect(human.stdout).toMatch(/1 removed, 1 kept \(1 in use, 0 younger than 0, 0 failed\)\./);
    expect(existsSync(fresh)).toBe(false);
    expect(existsSync(busy)).toBe(true);
    expect(existsSync(join(root, 'w1', 'notes.txt'))).toBe(true);
  });

  it('a root without leftovers says so', async () => {
    const empty = join(scratch, 'empty');
    await mkdir(join(empty, 'notes'), { recursive: true });
    await writeFile(join(empty, 'notes', 'kept.txt'), 'a file of the workspace, never listed');
    const result = runWs(['ls', '--root', empty, '--backend', 'local']);
    expect(result).toMatchObject({ status: 0, stderr: '' });
    expect(result.stdout).toBe('Nothing left by workspaces on the local backend.\n');
  });
});

const noBwrap = requireEngine('bubblewrap', bubblewrapProblem());
if (noBwrap) console.log(`skipping ws ls / ws gc --backend bwrap: ${noBwrap}`);

describe.skipIf(noBwrap !== undefined)('ws ls / ws gc --backend bwrap', () => {
  it("lists a crashed serve's folders and a live one's; gc removes the crashed one's only", async () => {
    // A temporary folder of this test's own for every process involved: the reaper looks nowhere else.
    const tmp = join(scratch, 'bwrap-tmp');
    await mkdir(tmp);
    const env = { TMPDIR: tmp, XDG_RUNTIME_DIR: '' };
    const crashed = await startHttpServer(['--backend', 'bwrap'], env);
    const crashedPid = crashed.child.pid as number;
    crashed.child.kill('SIGKILL');
    await new Promise((resolve) => crashed.child.once('exit', resolve));
    const live = await startHttpServer(['--backend', 'bwrap'], env);
    const livePid = live.child.pid as number;
    const of = (pid: number, names: string[]) => names.filter((name) => name.includes(`-${pid}-`));
    try {
      const listed = json<Listed>(['ls', '--backend', 'bwrap'], env);
      const names = listed.resources.map((item) => item.name);
      // Folders under its own temporary folder, and the workspaces' cgroups of its runtime folder.
      expect(listed.resources.every((item) => item.name.startsWith(tmp) || item.kind === 'cgroup')).toBe(
        true,
      );
      const folders = listed.resources.filter((item) => item.kind !== 'cgroup').map((item) => item.name);
      // Its runtime folder, the sandbox's /tmp and the temporary workdir, for each process.
      expect(of(crashedPid, folders)).toHaveLength(3);
      expect(of(livePid, folders)).toHaveLength(3);
      // As root, each workspace's cgroup (its process limit) too.
      const cgroups = listed.resources.filter((item) => item.kind === 'cgroup').map((item) => item.name);
      if (process.getuid?.() === 0) expect(of(crashedPid, cgroups).length).toBeGreaterThanOrEqual(1);
      for (const item of listed.resources) expect(item.inUse).toBe(item.name.includes(`-${livePid}-`));

      const reaped = json<Reaped>(['gc', '--backend', 'bwrap', '--older-than', '0'], env);
      expect(reaped.removed.map((item) => item.name).sort()).toEqual(of(crashedPid, names).sort());
      expect(reaped.kept.every((item) => item.reason === 'in-use')).toBe(true);
      for (const name of of(crashedPid, names)) expect(existsSync(name)).toBe(false);
      for (const name of of(livePid, names)) expect(existsSync(name)).toBe(true);
    } finally {
      expect(await live.stop()).toBe(0);
    }
    // Closed normally: it left nothing.
    expect(json<Listed>(['ls', '--backend', 'bwrap'], env).resources).toEqual([]);
  }, 120_000);
});

const noDocker = dockerUnavailable();
if (noDocker) console.log(`skipping ws ls / ws gc --backend docker: ${noDocker}`);

describe.skipIf(noDocker !== undefined)('ws ls / ws gc --backend docker', () => {
  // Every container of this file carries this owner tag: the commands and the cleanup touch nothing else.
  const owner = `ws-cli-gc-${generateId().slice(0, 8)}`;
  afterAll(async () => {
    await removeOwnedContainers(owner).catch(() => []);
  }, 120_000);

  it("lists a crashed serve's container and a live one; gc removes the orphan only", async () => {
    const run = generateId().slice(0, 6);
    const orphanId = `${run}-orphan`;
    const liveId = `${run}-live`;
    const serve = (workspaceId: string) =>
      startHttpServer(['--backend', 'docker', '--owner', owner, '--workspace-id', workspaceId]);
    // A `ws serve` that crashed: killed without closing anything, its container left behind.
    const crashed = await serve(orphanId);
    crashed.child.kill('SIGKILL');
    await new Promise((resolve) => crashed.child.once('exit', resolve));
    const live = await serve(liveId);
    try {
      const ls = () => json<Listed>(['ls', '--backend', 'docker', '--owner', owner]);
      // The killed process's gateway ends a moment after it (its stream closes): wait for that.
      let listed = ls();
      for (let attempt = 0; attempt < 60; attempt += 1) {
        if (listed.resources.find((item) => item.workspaceId === orphanId)?.inUse === false) break;
        await new Promise((resolve) => setTimeout(resolve, 500));
        listed = ls();
      }
      expect(listed.owner).toBe(owner);
      const state = Object.fromEntries(listed.resources.map((item) => [item.workspaceId, item]));
      expect(Object.keys(state).sort()).toEqual([liveId, orphanId].sort());
      expect(state[orphanId]).toMatchObject({ kind: 'container', owner, inUse: false });
      expect(state[liveId]).toMatchObject({ kind: 'container', owner, inUse: true });

      const table = runWs(['ls', '--backend', 'docker', '--owner', owner]);
      expect(table.stdout).toMatch(
        new RegExp(`container\\s+\\S+\\s+${liveId}\\s+${owner}\\s+-\\s+-\\s+\\S+\\s+in use`),
      );
      expect(table.stdout).toMatch(
        new RegExp(`container\\s+\\S+\\s+${orphanId}\\s+${owner}\\s+-\\s+-\\s+\\S+\\s+idle`),
      );

      const young = json<Reaped>(['gc', '--backend', 'docker', '--owner', owner, '--older-than', '1h']);
      expect(young.removed).toEqual([]);
      expect(Object.fromEntries(young.kept.map((item) => [item.workspaceId, item.reason]))).toEqual({
        [orphanId]: 'young',
        [liveId]: 'in-use',
      });

      const dry = json<Reaped>([
        'gc',
        '--backend',
        'docker',
        '--owner',
        owner,
        '--older-than',
        '0',
        '--dry-run',
      ]);
      expect(dry.removed.map((item) => item.workspaceId)).toEqual([orphanId]);
      expect(ls().resources).toHaveLength(2);

      const reaped = runWs(['gc', '--backend', 'docker', '--owner', owner, '--older-than', '0']);
      expect(reaped.status, reaped.stderr).toBe(0);
      expect(reaped.stdout).toMatch(new RegExp(`removed\\s+container\\s+\\S+\\s+${orphanId}`));
      expect(reaped.stdout).toMatch(new RegExp(`kept\\s+container\\s+\\S+\\s+${liveId}.*in use`));
      expect(ls().resources.map((item) => item.workspaceId)).toEqual([liveId]);
    } finally {
      expect(await live.stop()).toBe(0);
    }
    // The live one closed normally: its container is gone, nothing is left to list.
    expect(json<Listed>(['ls', '--backend', 'docker', '--owner', owner]).resources).toEqual([]);
  }, 240_000);
});

// A cloud backend through its real SDK: E2B against the emulator of @ws/emulators (sandboxes are
// Docker containers of the workspace image).
const e2bProblem = noDocker
  ? `the E2B emulator needs Docker: ${noDocker}`
  : (requireEngine('docker', await dockerProblem(DEFAULT_DOCKER_IMAGE)) ??
    requireEngine(
      'build',
      existsSync(EMULATOR_BIN) ? undefined : `${EMULATOR_BIN} is missing: build @ws/emulators first`,
    ));
if (e2bProblem) console.log(`skipping ws ls / ws gc --backend e2b: ${e2bProblem}`);

describe.skipIf(e2bProblem !== undefined)('ws ls / ws gc --backend e2b (emulated)', () => {
  const owner = `ws-cli-e2b-${generateId().slice(0, 8)}`;
  let emulator: EmulatorProcess | undefined;
  let flags: string[] = [];
  let env: Record<string, string> = {};
  beforeAll(async () => {
    emulator = await launchEmulator('e2b', ['--template', `base=${DEFAULT_DOCKER_IMAGE}`]);
    const variable = (name: string) => emulator?.env[name] ?? '';
    flags = ['--backend', 'e2b', '--api-url', variable('E2B_API_URL'), '--api-key', variable('E2B_API_KEY')];
    // The sandboxes' own endpoint has no flag: the SDK reads it from the environment.
    env = { E2B_SANDBOX_URL: variable('E2B_SANDBOX_URL') };
  }, 120_000);
  afterAll(async () => {
    if (emulator) {
      await killOwnedSandboxes(owner, {
        apiUrl: emulator.env.E2B_API_URL,
        apiKey: emulator.env.E2B_API_KEY,
      }).catch(() => []);
      await emulator.stop();
    }
  }, 120_000);

  it('lists a served sandbox in use, then paused once the server stopped; gc kills the paused one', async () => {
    const workspaceId = `cli-${generateId().slice(0, 6)}`;
    const ls = () => {
      const result = runWs(['ls', ...flags, '--owner', owner, '--json'], env);
      expect(result.status, result.stderr).toBe(0);
      return (JSON.parse(result.stdout) as Listed).resources;
    };
    const server = await startHttpServer([...flags, '--owner', owner, '--workspace-id', workspaceId], env);
    try {
      expect(ls()).toEqual([expect.objectContaining({ kind: 'sandbox', workspaceId, owner, inUse: true })]);
      const kept = runWs(['gc', ...flags, '--owner', owner, '--older-than', '0', '--json'], env);
      expect(JSON.parse(kept.stdout)).toMatchObject({
        removed: [],
        kept: [{ workspaceId, reason: 'in-use' }],
      });
    } finally {
      expect(await server.stop()).toBe(0);
    }
    // Closing paused it: no longer in use, still listed, until gc kills it.
    expect(ls()).toEqual([expect.objectContaining({ kind: 'sandbox', workspaceId, inUse: false })]);
    const reaped = runWs(['gc', ...flags, '--owner', owner, '--older-than', '0'], env);
    expect(reaped.status, reaped.stderr).toBe(0);
    expect(reaped.stdout).toMatch(new RegExp(`removed\\s+sandbox\\s+\\S+\\s+${workspaceId}\\s+${owner}`));
    expect(ls()).toEqual([]);
  }, 240_000);

  it("a manager's sandbox carries its request's user and agent: manager.list() and ws ls show them", async () => {
    const manager = new WorkspaceManager({
      factory: e2bWorkspaces({
        apiUrl: emulator?.env.E2B_API_URL,
        sandboxUrl: emulator?.env.E2B_SANDBOX_URL,
        apiKey: emulator?.env.E2B_API_KEY,
        owner,
      }),
    });
    try {
      const lease = await manager.acquire({
        userId: 'alice@example.com',
        agentId: 'coder',
        sessionId: 's-1',
      });
      expect(manager.list()).toEqual([
        expect.objectContaining({
          workspaceId: lease.workspaceId,
          userId: 'alice@example.com',
          agentId: 'coder',
          sessionId: 's-1',
          state: 'open',
          leases: 1,
          inFlight: 0,
        }),
      ]);
      const listed = runWs(['ls', ...flags, '--owner', owner, '--json'], env);
      expect(listed.status, listed.stderr).toBe(0);
      expect((JSON.parse(listed.stdout) as Listed).resources).toEqual([
        expect.objectContaining({
          kind: 'sandbox',
          workspaceId: lease.workspaceId,
          userId: 'alice@example.com',
          agentId: 'coder',
          inUse: true,
        }),
      ]);
      const table = runWs(['ls', ...flags, '--owner', owner], env);
      expect(table.stdout).toMatch(
        new RegExp(`${lease.workspaceId}\\s+${owner}\\s+alice@example\\.com\\s+coder\\s`),
      );
      lease.release();
    } finally {
      await manager.closeAll();
      // Closed, the sandbox is paused; the next case expects nothing left of this owner.
      await killOwnedSandboxes(owner, {
        apiUrl: emulator?.env.E2B_API_URL,
        apiKey: emulator?.env.E2B_API_KEY,
      });
    }
  }, 240_000);

  it('deletes the sandbox of an unnamed workspace when ws exec ends, leaving nothing to reap', async () => {
    const ran = runWs(['exec', ...flags, '--owner', owner, '--', 'sh', '-c', 'echo ran; exit 4'], env);
    expect(ran.stdout).toBe('ran\n');
    expect(ran.status, ran.stderr).toBe(4);
    const listed = runWs(['ls', ...flags, '--owner', owner, '--json'], env);
    expect(listed.status, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as Listed).resources).toEqual([]);
  }, 240_000);
});
