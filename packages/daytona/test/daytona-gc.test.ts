import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Daytona, type Sandbox } from '@daytonaio/sdk';
import { type GcReport, generateId, WorkspaceManager } from '@ws/core';
import { WS_LABELS } from '@ws/core/backend';
import { afterAll, describe, expect, it } from 'vitest';
import { DaytonaWorkspace, daytonaWorkspaces, deleteOwnedSandboxes, gcDaytona } from '../src/index.js';
import { connection, emulatorProblem, stopEmulator } from './emulator.js';

/** An attachment record of a process on another machine (machine id, pid, object). */
const REMOTE_RECORD = '0123456789ab-1-remote00';

// The reaper, through the unmodified SDK against the emulator.
const problem = await emulatorProblem();
if (problem) console.warn(`[daytona gc] skipped: ${problem}`);
// Every sandbox of this file carries this owner tag: cleanup and gc touch nothing else.
const owner = `ws-daytona-gc-${generateId().slice(0, 8)}`;
const emulated = problem ? undefined : await connection();
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');
const daytona = emulated ? new Daytona(emulated) : undefined;
/** Older than anything here: steers every sandbox to `young`. */
const AGES = 10 * 365 * 24 * 3_600_000;

afterAll(async () => {
  await daytona?.[Symbol.asyncDispose]();
  if (emulated) await deleteOwnedSandboxes(owner, emulated).catch(() => []);
  await stopEmulator();
}, 120_000);

const open = (workspaceId: string) =>
  new DaytonaWorkspace({ ...emulated, owner, workspaceId, gateway: false });

/** The states of every sandbox carrying the workspace id. */
async function statesOf(workspaceId: string): Promise<(string | undefined)[]> {
  const found: (string | undefined)[] = [];
  for await (const sandbox of daytona!.list({ labels: { [WS_LABELS.id]: workspaceId } }))
    if (sandbox.state !== 'destroyed' && sandbox.state !== 'destroying') found.push(sandbox.state);
  return found;
}

const reasons = (report: GcReport) =>
  Object.fromEntries(report.kept.map((resource) => [resource.workspaceId, resource.reason]));
const removed = (report: GcReport) => report.removed.map((resource) => resource.workspaceId).sort();

/** Opens `workspaceId` in a node process killed right after: a host that died with it open. */
async function crashWhileOpen(workspaceId: string): Promise<void> {
  if (!existsSync(built)) throw new Error('The package is not built: build it first (npm test does)');
  const script = `const { DaytonaWorkspace } = await import(${JSON.stringify(built)});
const workspace = new DaytonaWorkspace(${JSON.stringify({ ...emulated, owner, workspaceId, gateway: false })});
await workspace.initialize();
process.kill(process.pid, 'SIGKILL');`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'inherit' });
  const [, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once('exit', (code, signal) => resolve([code, signal])),
  );
  expect(signal).toBe('SIGKILL');
}

describe.skipIf(problem !== undefined)('gcDaytona on the emulator', () => {
  it('removes orphans older than the age, keeps young and open ones, and a dry run removes nothing', async () => {
    const run = generateId().slice(0, 6);
    const [stoppedId, strayId, crashedId, openId] = ['stopped', 'stray', 'crashed', 'open'].map(
      (name) => `${run}-${name}`,
    ) as [string, string, string, string];
    // Closed without destroy: stopped, its files kept.
    const closed = open(stoppedId);
    await closed.initialize();
    await closed.close();
    // Created with the marks by a service that died before it attached: started, no records.
    await daytona!.create({
      labels: {
        [WS_LABELS.id]: strayId,
        [WS_LABELS.owner]: owner,
        [WS_LABELS.created]: new Date().toISOString(),
      },
    });
    // A host killed while it had the workspace open: started, its record left behind.
    await crashWhileOpen(crashedId);
    // Without this project's marks: never listed, never touched.
    const foreign = await daytona!.create({ labels: { [WS_LABELS.owner]: owner } });
    await using inUse = open(openId);
    await inUse.initialize();

    // The killed host was a process of this machine: its record is known dead, the sandbox an orphan.
    const dead = await gcDaytona({ ...emulated, owner, olderThanMs: 0, dryRun: true });
    expect(removed(dead)).toEqual([stoppedId, strayId, crashedId].sort());
    expect(reasons(dead)).toEqual({ [openId]: 'in-use' });
    // A fresh record of a process on another machine counts as in use until it goes stale.
    let crashed: Sandbox | undefined;
    for await (const sandbox of daytona!.list({ labels: { [WS_LABELS.id]: crashedId } })) crashed = sandbox;
    const home = await crashed!.getUserHomeDir();
    const planted = await crashed!.process.executeCommand(`touch ${home}/.ws/attached/${REMOTE_RECORD}`);
    expect(planted.exitCode).toBe(0);
    const dry = await gcDaytona({ ...emulated, owner, olderThanMs: 0, dryRun: true });
    expect(dry.dryRun).toBe(true);
    expect(removed(dry)).toEqual([stoppedId, strayId].sort());
    expect(reasons(dry)).toEqual({ [crashedId]: 'in-use', [openId]: 'in-use' });
    expect(dry.listed.map((resource) => resource.name)).not.toContain(foreign.id);
    expect(await statesOf(stoppedId)).toEqual(['stopped']);
    expect(await statesOf(strayId)).toEqual(['started']);

    // The other host stops touching its record: make it as old as a stale one.
    const aged = await crashed!.process.executeCommand(`sh -c 'touch -d @0 ${home}/.ws/attached/*'`);
    expect(aged.exitCode).toBe(0);

    const young = await gcDaytona({ ...emulated, owner, olderThanMs: AGES });
    expect(young.removed).toEqual([]);
    expect(reasons(young)).toEqual({
      [stoppedId]: 'young',
      [strayId]: 'young',
      [crashedId]: 'young',
      [openId]: 'in-use',
    });

    const report = await gcDaytona({ ...emulated, owner, olderThanMs: 0 });
    expect(report.dryRun).toBe(false);
    expect(removed(report)).toEqual([stoppedId, strayId, crashedId].sort());
    expect(reasons(report)).toEqual({ [openId]: 'in-use' });
    for (const id of [stoppedId, strayId, crashedId]) expect(await statesOf(id)).toEqual([]);
    expect((await inUse.getSandbox().exec(['echo', 'alive'])).stdoutText).toBe('alive\n');
    expect((await daytona!.get(foreign.id)).state).toBe('started');
  }, 300_000);

  it('daytonaWorkspaces: a manager on the factory opens the sandbox labelled with the id, and stops it on closeAll', async () => {
    const workspaceId = `${generateId().slice(0, 6)}-factory`;
    const manager = new WorkspaceManager({
      factory: daytonaWorkspaces({ ...emulated, owner, gateway: false, env: { GREETING: 'hello' } }),
    });
    const lease = await manager.acquire({ workspaceId });
    expect(lease.workspace).toBeInstanceOf(DaytonaWorkspace);
    const result = await lease.workspace.getSandbox().exec(['sh', '-c', 'echo "$GREETING"']);
    expect(result.stdoutText).toBe('hello\n');
    expect(await statesOf(workspaceId)).toEqual(['started']);
    lease.release();
    await manager.closeAll();
    expect(lease.workspace.state).toBe('closed');
    expect(await statesOf(workspaceId)).toEqual(['stopped']);
    await manager[Symbol.asyncDispose]();
  }, 120_000);
});
