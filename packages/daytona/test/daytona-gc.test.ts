import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Daytona, type Sandbox } from '@daytonaio/sdk';
import { type ReaperCreateOptions, registerReaperSuite } from '@ws/contract-tests';
import { generateId, WorkspaceManager } from '@ws/core';
import { WS_LABELS } from '@ws/core/backend';
import { afterAll, describe, expect, it } from 'vitest';
import { DaytonaWorkspace, daytonaWorkspaces, deleteOwnedSandboxes, gcDaytona } from '../src/index.js';
import { connection, emulatorProblem, stopEmulator } from './emulator.js';

// The reaper, through the unmodified SDK against the emulator.
const problem = await emulatorProblem();
if (problem) console.warn(`[daytona gc] skipped: ${problem}`);
// Every sandbox of the factory case carries this owner tag (the suite has tags of its own).
const factoryOwner = `ws-daytona-gc-${generateId().slice(0, 8)}`;
const emulated = problem ? undefined : await connection();
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');
const daytona = emulated ? new Daytona(emulated) : undefined;

afterAll(async () => {
  await daytona?.[Symbol.asyncDispose]();
  if (emulated) await deleteOwnedSandboxes(factoryOwner, emulated).catch(() => []);
  await stopEmulator();
}, 120_000);

/** Every sandbox carrying the workspace id, but those being deleted. */
async function sandboxesOf(workspaceId: string): Promise<Sandbox[]> {
  const found: Sandbox[] = [];
  for await (const sandbox of daytona!.list({ labels: { [WS_LABELS.id]: workspaceId } }))
    if (sandbox.state !== 'destroyed' && sandbox.state !== 'destroying') found.push(sandbox);
  return found;
}

/** Runs a shell command in the sandbox of `workspaceId` through the SDK itself, in its home folder. */
async function runIn(workspaceId: string, command: (home: string) => string): Promise<void> {
  const [sandbox] = await sandboxesOf(workspaceId);
  if (!sandbox) throw new Error(`no sandbox carries ${workspaceId}`);
  const home = await sandbox.getUserHomeDir();
  const result = await sandbox.process.executeCommand(`sh -c '${command(home ?? '')}'`);
  expect(result.exitCode, result.result).toBe(0);
}

const options = ({ workspaceId, owner }: ReaperCreateOptions) => ({
  ...emulated,
  owner,
  workspaceId,
  gateway: false,
});

await registerReaperSuite({
  name: 'daytona (emulator)',
  kind: 'sandbox',
  skipReason: () => problem,
  create: (create) => new DaytonaWorkspace(options(create)),
  gc: (gcOptions) => gcDaytona({ ...emulated, ...gcOptions }),
  resources: async (workspaceId) =>
    (await sandboxesOf(workspaceId)).map((sandbox) => `${sandbox.id} ${sandbox.state}`),
  process: { module: built, exportName: 'DaytonaWorkspace', options },
  orphans: {
    // Closed without destroy: stopped, its files kept.
    closed: async (create) => {
      const closed = new DaytonaWorkspace(options(create));
      await closed.initialize();
      await closed.close();
    },
    // Created with the marks by a service that died before it attached: started, no records.
    stray: async ({ workspaceId, owner }) => {
      await daytona!.create({
        labels: {
          [WS_LABELS.id]: workspaceId,
          [WS_LABELS.owner]: owner,
          [WS_LABELS.created]: new Date().toISOString(),
        },
      });
    },
  },
  // Without the workspace id: never listed, never touched.
  unmarked: async (owner) => {
    const foreign = await daytona!.create({ labels: { [WS_LABELS.owner]: owner } });
    return { name: foreign.id, exists: async () => (await daytona!.get(foreign.id)).state === 'started' };
  },
  records: {
    plant: (workspaceId, name) => runIn(workspaceId, (home) => `touch ${home}/.ws/attached/${name}`),
    age: (workspaceId) => runIn(workspaceId, (home) => `touch -d @0 ${home}/.ws/attached/*`),
  },
  cleanup: async (owner) => {
    await deleteOwnedSandboxes(owner, emulated);
  },
});

describe.skipIf(problem !== undefined)('daytonaWorkspaces on the emulator', () => {
  it('a manager on the factory opens the sandbox labelled with the id, and stops it on closeAll', async () => {
    const workspaceId = `${generateId().slice(0, 6)}-factory`;
    const states = async () => (await sandboxesOf(workspaceId)).map((sandbox) => sandbox.state);
    const manager = new WorkspaceManager({
      factory: daytonaWorkspaces({
        ...emulated,
        owner: factoryOwner,
        gateway: false,
        env: { GREETING: 'hello' },
      }),
    });
    const lease = await manager.acquire({ workspaceId });
    expect(lease.workspace).toBeInstanceOf(DaytonaWorkspace);
    const result = await lease.workspace.getSandbox().exec(['sh', '-c', 'echo "$GREETING"']);
    expect(result.stdoutText).toBe('hello\n');
    expect(await states()).toEqual(['started']);
    lease.release();
    await manager.closeAll();
    expect(lease.workspace.state).toBe('closed');
    expect(await states()).toEqual(['stopped']);
    await manager[Symbol.asyncDispose]();
  }, 120_000);
});
