import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type GcReport, generateId, WorkspaceManager } from '@ws/core';
import { WS_LABELS } from '@ws/core/backend';
import { Sandbox } from 'e2b';
import { afterAll, describe, expect, it } from 'vitest';
import { E2BWorkspace, e2bWorkspaces, gcE2B, killOwnedSandboxes } from '../src/index.js';
import { connection, emulatorProblem, stopEmulator } from './emulator.js';

/** An attachment record of a process on another machine (machine id, pid, object). */
const REMOTE_RECORD = '0123456789ab-1-remote00';

// The reaper and scaling out, through the unmodified SDK against the emulator.
const problem = await emulatorProblem();
if (problem) console.warn(`[e2b gc] skipped: ${problem}`);
// Every sandbox of this file carries this owner tag: cleanup and gc touch nothing else.
const owner = `ws-e2b-gc-${generateId().slice(0, 8)}`;
const emulated = problem ? undefined : await connection();
const here = dirname(fileURLToPath(import.meta.url));
const builtE2B = join(here, '..', 'dist', 'index.js');
const builtCore = join(here, '..', '..', 'core', 'dist', 'index.js');
/** Older than anything here: steers every sandbox to `young`. */
const AGES = 10 * 365 * 24 * 3_600_000;

afterAll(async () => {
  if (emulated) await killOwnedSandboxes(owner, emulated).catch(() => []);
  await stopEmulator();
}, 120_000);

const open = (workspaceId: string) => new E2BWorkspace({ ...emulated, owner, workspaceId, gateway: false });

async function sandboxesOf(workspaceId: string): Promise<string[]> {
  const found = await Sandbox.list({
    ...emulated,
    query: { metadata: { [WS_LABELS.id]: workspaceId }, state: ['running', 'paused'] },
  }).nextItems();
  return found.map((info) => info.state);
}

const reasons = (report: GcReport) =>
  Object.fromEntries(report.kept.map((resource) => [resource.workspaceId, resource.reason]));
const removed = (report: GcReport) => report.removed.map((resource) => resource.workspaceId).sort();

/** Runs an ES module in its own node process; resolves with the process and its first stdout line. */
function runScript(
  script: string,
): Promise<{ child: ChildProcess; line: string; closed: Promise<number | null> }> {
  if (!existsSync(builtE2B) || !existsSync(builtCore))
    throw new Error('The packages are not built: build them first (npm test does)');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const closed = new Promise<number | null>((done) => child.once('close', done));
    let out = '';
    let err = '';
    child.stderr?.on('data', (chunk) => {
      err += chunk;
    });
    child.stdout?.on('data', (chunk) => {
      out += chunk;
      const newline = out.indexOf('\n');
      if (newline >= 0) resolve({ child, line: out.slice(0, newline), closed });
    });
    child.once('close', (code) => reject(new Error(`exited with ${code} before answering: ${err}`)));
  });
}

/** A script whose manager opens `workspaceId`, prints its sandbox id, then runs `after`. */
function managerScript(workspaceId: string, after: string): string {
  const options = { ...emulated, owner, gateway: false };
  return `
    import { WorkspaceManager } from ${JSON.stringify(builtCore)};
    import { E2BWorkspace } from ${JSON.stringify(builtE2B)};
    const manager = new WorkspaceManager({
      factory: (workspaceId) => new E2BWorkspace({ ...${JSON.stringify(options)}, workspaceId }),
    });
    const lease = await manager.acquire({ workspaceId: ${JSON.stringify(workspaceId)} });
    console.log(lease.workspace.sandboxId);
    ${after}
  `;
}

describe.skipIf(problem !== undefined)('gcE2B on the emulator', () => {
  it('removes orphans older than the age, keeps young and open ones, and a dry run removes nothing', async () => {
    const run = generateId().slice(0, 6);
    const [pausedId, strayId, crashedId, openId] = ['paused', 'stray', 'crashed', 'open'].map(
      (name) => `${run}-${name}`,
    ) as [string, string, string, string];
    // Closed without destroy: paused, its files kept.
    const closed = open(pausedId);
    await closed.initialize();
    await closed.close();
    // Created with the marks by a service that died before it attached: running, no records.
    await Sandbox.create('base', {
      ...emulated,
      metadata: {
        [WS_LABELS.id]: strayId,
        [WS_LABELS.owner]: owner,
        [WS_LABELS.created]: new Date().toISOString(),
      },
    });
    // A host killed while it had the workspace open: running, its record left behind.
    const crashed = await runScript(managerScript(crashedId, "process.kill(process.pid, 'SIGKILL');"));
    await crashed.closed.catch(() => {});
    // Without this project's marks: never listed, never touched.
    const foreign = await Sandbox.create('base', { ...emulated, metadata: { [WS_LABELS.owner]: owner } });
    await using inUse = open(openId);
    await inUse.initialize();

    // The killed host was a process of this machine: its record is known dead, the sandbox an orphan.
    const dead = await gcE2B({ ...emulated, owner, olderThanMs: 0, dryRun: true });
    expect(removed(dead)).toEqual([pausedId, strayId, crashedId].sort());
    expect(reasons(dead)).toEqual({ [openId]: 'in-use' });
    // A fresh record of a process on another machine counts as in use until it goes stale.
    const handle = await Sandbox.connect(crashed.line, emulated);
    const planted = await handle.commands.run(`touch /home/user/.ws/attached/${REMOTE_RECORD}`);
    expect(planted.exitCode).toBe(0);
    const dry = await gcE2B({ ...emulated, owner, olderThanMs: 0, dryRun: true });
    expect(dry.dryRun).toBe(true);
    expect(removed(dry)).toEqual([pausedId, strayId].sort());
    expect(reasons(dry)).toEqual({ [crashedId]: 'in-use', [openId]: 'in-use' });
    expect(dry.listed.map((resource) => resource.name)).not.toContain(foreign.sandboxId);
    expect(await sandboxesOf(pausedId)).toEqual(['paused']);
    expect(await sandboxesOf(strayId)).toEqual(['running']);

    // The other host stops touching its record: make it as old as a stale one.
    const aged = await handle.commands.run('touch -d @0 /home/user/.ws/attached/*');
    expect(aged.exitCode).toBe(0);

    const young = await gcE2B({ ...emulated, owner, olderThanMs: AGES });
    expect(young.removed).toEqual([]);
    expect(reasons(young)).toEqual({
      [pausedId]: 'young',
      [strayId]: 'young',
      [crashedId]: 'young',
      [openId]: 'in-use',
    });

    const report = await gcE2B({ ...emulated, owner, olderThanMs: 0 });
    expect(report.dryRun).toBe(false);
    expect(removed(report)).toEqual([pausedId, strayId, crashedId].sort());
    expect(reasons(report)).toEqual({ [openId]: 'in-use' });
    for (const id of [pausedId, strayId, crashedId]) expect(await sandboxesOf(id)).toEqual([]);
    expect((await inUse.getSandbox().exec(['echo', 'alive'])).stdoutText).toBe('alive\n');
    expect((await Sandbox.getInfo(foreign.sandboxId, emulated)).state).toBe('running');
  }, 240_000);

  it('puts two managers in two processes asking for one workspace on one sandbox', async () => {
    const workspaceId = `${generateId().slice(0, 6)}-shared`;
    // Each holds its lease until its stdin closes, then closes its manager.
    const hold = `
      await new Promise((resolve) => { process.stdin.on('data', () => {}); process.stdin.on('end', resolve); });
      await manager[Symbol.asyncDispose]();
    `;
    const [first, second] = await Promise.all([
      runScript(managerScript(workspaceId, hold)),
      runScript(managerScript(workspaceId, hold)),
    ]);
    expect(first.line).toMatch(/\S/);
    expect(first.line).toBe(second.line);
    expect(await sandboxesOf(workspaceId)).toEqual(['running']);
    first.child.stdin?.end();
    expect(await first.closed).toBe(0);
    // The other process still uses it: running, and in use for the reaper.
    expect(await sandboxesOf(workspaceId)).toEqual(['running']);
    const report = await gcE2B({ ...emulated, owner, olderThanMs: 0, dryRun: true });
    expect(reasons(report)[workspaceId]).toBe('in-use');
    second.child.stdin?.end();
    expect(await second.closed).toBe(0);
    expect(await sandboxesOf(workspaceId)).toEqual(['paused']);
  }, 240_000);

  it('e2bWorkspaces: a manager on the factory opens the sandbox carrying the id, and pauses it on closeAll', async () => {
    const workspaceId = `${generateId().slice(0, 6)}-factory`;
    const manager = new WorkspaceManager({
      factory: e2bWorkspaces({ ...emulated, owner, gateway: false, env: { GREETING: 'hello' } }),
    });
    const lease = await manager.acquire({ workspaceId });
    expect(lease.workspace).toBeInstanceOf(E2BWorkspace);
    const result = await lease.workspace.getSandbox().exec(['sh', '-c', 'echo "$GREETING"']);
    expect(result.stdoutText).toBe('hello\n');
    expect(await sandboxesOf(workspaceId)).toEqual(['running']);
    lease.release();
    await manager.closeAll();
    expect(lease.workspace.state).toBe('closed');
    expect(await sandboxesOf(workspaceId)).toEqual(['paused']);
    await manager[Symbol.asyncDispose]();
  }, 120_000);
});
