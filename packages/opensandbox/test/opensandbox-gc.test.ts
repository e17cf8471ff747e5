import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConnectionConfig, Sandbox, SandboxManager } from '@alibaba-group/opensandbox';
import { type GcReport, generateId } from '@ws/core';
import { WS_LABELS } from '@ws/core/backend';
import { afterAll, describe, expect, it } from 'vitest';
import { gcOpenSandbox, killOwnedSandboxes, OpenSandboxWorkspace } from '../src/index.js';
import { connection, emulatorProblem, stopEmulator } from './emulator.js';

/** An attachment record of a process on another machine (machine id, pid, object). */
const REMOTE_RECORD = '0123456789ab-1-remote00';

// The reaper and scaling out, through the unmodified SDK against the emulator.
const problem = await emulatorProblem();
if (problem) console.warn(`[opensandbox gc] skipped: ${problem}`);
// Every sandbox of this file carries this owner tag: cleanup and gc touch nothing else.
const owner = `ws-os-gc-${generateId().slice(0, 8)}`;
const emulated = problem ? undefined : await connection();
const here = dirname(fileURLToPath(import.meta.url));
const builtBackend = join(here, '..', 'dist', 'index.js');
const builtCore = join(here, '..', '..', 'core', 'dist', 'index.js');
/** Older than anything here: steers every sandbox to `young`. */
const AGES = 10 * 365 * 24 * 3_600_000;

afterAll(async () => {
  if (emulated) await killOwnedSandboxes(owner, emulated).catch(() => []);
  await stopEmulator();
}, 120_000);

const open = (workspaceId: string) =>
  new OpenSandboxWorkspace({
    ...(emulated as NonNullable<typeof emulated>),
    owner,
    workspaceId,
    gateway: false,
  });
const config = () => new ConnectionConfig({ domain: emulated?.domain, apiKey: emulated?.apiKey });
const gcOptions = () => ({ domain: emulated?.domain, apiKey: emulated?.apiKey, owner });

/** Runs a shell command in a sandbox through the raw SDK; resolves with its exit code. */
async function runIn(sandboxId: string, command: string): Promise<number | undefined> {
  const handle = await Sandbox.connect({ sandboxId, connectionConfig: config() });
  try {
    return (await handle.commands.run(command)).exitCode ?? undefined;
  } finally {
    await handle.close();
  }
}

/** The states of the sandboxes carrying `workspaceId`, once none is passing between two (pausing…). */
async function sandboxesOf(workspaceId: string): Promise<string[]> {
  const manager = SandboxManager.create({ connectionConfig: config() });
  try {
    for (let attempt = 0; ; attempt++) {
      const found = await manager.listSandboxInfos({
        metadata: { [WS_LABELS.id]: workspaceId },
        pageSize: 100,
      });
      const states = found.items
        .map((info) => info.status.state)
        .filter((state) => state !== 'Terminated' && state !== 'Failed');
      if (attempt >= 100 || !states.some((state) => ['Pending', 'Pausing', 'Resuming'].includes(state)))
        return states;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await manager.close();
  }
}

const reasons = (report: GcReport) =>
  Object.fromEntries(report.kept.map((resource) => [resource.workspaceId, resource.reason]));
const removed = (report: GcReport) => report.removed.map((resource) => resource.workspaceId).sort();

/** Runs an ES module in its own node process; resolves with the process and its first stdout line. */
function runScript(
  script: string,
): Promise<{ child: ChildProcess; line: string; closed: Promise<number | null> }> {
  if (!existsSync(builtBackend) || !existsSync(builtCore))
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
    import { openSandboxWorkspaces } from ${JSON.stringify(builtBackend)};
    const manager = new WorkspaceManager({ factory: openSandboxWorkspaces(${JSON.stringify(options)}) });
    const lease = await manager.acquire({ workspaceId: ${JSON.stringify(workspaceId)} });
    console.log(lease.workspace.sandboxId);
    ${after}
  `;
}

describe.skipIf(problem !== undefined)('gcOpenSandbox on the emulator', () => {
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
    const stray = await Sandbox.create({
      image: emulated?.image as string,
      connectionConfig: config(),
      metadata: {
        [WS_LABELS.id]: strayId,
        [WS_LABELS.owner]: owner,
        [WS_LABELS.created]: new Date().toISOString(),
      },
    });
    await stray.close();
    // A host killed while it had the workspace open: running, its record left behind.
    const crashed = await runScript(managerScript(crashedId, "process.kill(process.pid, 'SIGKILL');"));
    await crashed.closed.catch(() => {});
    // Without this project's marks: never listed, never touched.
    const foreign = await Sandbox.create({
      image: emulated?.image as string,
      connectionConfig: config(),
      metadata: { [WS_LABELS.owner]: owner },
    });
    await foreign.close();
    await using inUse = open(openId);
    await inUse.initialize();

    // The killed host was a process of this machine: its record is known dead, the sandbox an orphan.
    const dead = await gcOpenSandbox({ ...gcOptions(), olderThanMs: 0, dryRun: true });
    expect(removed(dead)).toEqual([pausedId, strayId, crashedId].sort());
    expect(reasons(dead)).toEqual({ [openId]: 'in-use' });
    // A fresh record of a process on another machine counts as in use until it goes stale.
    expect(await runIn(crashed.line, `touch /root/.ws/attached/${REMOTE_RECORD}`)).toBe(0);
    const dry = await gcOpenSandbox({ ...gcOptions(), olderThanMs: 0, dryRun: true });
    expect(dry.dryRun).toBe(true);
    expect(removed(dry)).toEqual([pausedId, strayId].sort());
    expect(reasons(dry)).toEqual({ [crashedId]: 'in-use', [openId]: 'in-use' });
    expect(dry.listed.map((resource) => resource.name)).not.toContain(foreign.id);
    expect(await sandboxesOf(pausedId)).toEqual(['Paused']);
    expect(await sandboxesOf(strayId)).toEqual(['Running']);

    // The other host stops touching its record: make it as old as a stale one.
    expect(await runIn(crashed.line, 'touch -d @0 /root/.ws/attached/*')).toBe(0);

    const young = await gcOpenSandbox({ ...gcOptions(), olderThanMs: AGES });
    expect(young.removed).toEqual([]);
    expect(reasons(young)).toEqual({
      [pausedId]: 'young',
      [strayId]: 'young',
      [crashedId]: 'young',
      [openId]: 'in-use',
    });

    const report = await gcOpenSandbox({ ...gcOptions(), olderThanMs: 0 });
    expect(report.dryRun).toBe(false);
    expect(removed(report)).toEqual([pausedId, strayId, crashedId].sort());
    expect(reasons(report)).toEqual({ [openId]: 'in-use' });
    for (const id of [pausedId, strayId, crashedId]) expect(await sandboxesOf(id)).toEqual([]);
    expect((await inUse.getSandbox().exec(['echo', 'alive'])).stdoutText).toBe('alive\n');
    const manager = SandboxManager.create({ connectionConfig: config() });
    expect((await manager.getSandboxInfo(foreign.id)).status.state).toBe('Running');
    await manager.close();
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
    expect(await sandboxesOf(workspaceId)).toEqual(['Running']);
    first.child.stdin?.end();
    expect(await first.closed).toBe(0);
    // The other process still uses it: running, and in use for the reaper.
    expect(await sandboxesOf(workspaceId)).toEqual(['Running']);
    const report = await gcOpenSandbox({ ...gcOptions(), olderThanMs: 0, dryRun: true });
    expect(reasons(report)[workspaceId]).toBe('in-use');
    second.child.stdin?.end();
    expect(await second.closed).toBe(0);
    expect(await sandboxesOf(workspaceId)).toEqual(['Paused']);
  }, 240_000);
});
