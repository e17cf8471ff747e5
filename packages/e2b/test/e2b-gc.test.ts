import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ReaperCreateOptions, registerReaperSuite } from '@ws/contract-tests';
import { generateId, WorkspaceManager } from '@ws/core';
import { WS_LABELS } from '@ws/core/backend';
import { Sandbox, type SandboxInfo } from 'e2b';
import { afterAll, describe, expect, it } from 'vitest';
import { E2BWorkspace, e2bWorkspaces, gcE2B, killOwnedSandboxes } from '../src/index.js';
import { connection, emulatorProblem, stopEmulator } from './emulator.js';

// The reaper and scaling out, through the unmodified SDK against the emulator.
const problem = await emulatorProblem();
if (problem) console.warn(`[e2b gc] skipped: ${problem}`);
// Every sandbox of the factory case carries this owner tag (the suite has tags of its own).
const factoryOwner = `ws-e2b-gc-${generateId().slice(0, 8)}`;
const emulated = problem ? undefined : await connection();
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');
const ATTACHED = '/home/user/.ws/attached';

afterAll(async () => {
  if (emulated) await killOwnedSandboxes(factoryOwner, emulated).catch(() => []);
  await stopEmulator();
}, 120_000);

/** The sandboxes carrying the workspace id, running or paused. */
async function sandboxesOf(workspaceId: string): Promise<SandboxInfo[]> {
  return Sandbox.list({
    ...emulated,
    query: { metadata: { [WS_LABELS.id]: workspaceId }, state: ['running', 'paused'] },
  }).nextItems();
}

/** Runs a shell command in the sandbox of `workspaceId` through the SDK itself. */
async function runIn(workspaceId: string, command: string): Promise<void> {
  const [info] = await sandboxesOf(workspaceId);
  if (!info) throw new Error(`no sandbox carries ${workspaceId}`);
  const result = await (await Sandbox.connect(info.sandboxId, emulated)).commands.run(command);
  expect(result.exitCode, result.stderr).toBe(0);
}

const options = ({ workspaceId, owner }: ReaperCreateOptions) => ({
  ...emulated,
  owner,
  workspaceId,
  gateway: false,
});

await registerReaperSuite({
  name: 'e2b (emulator)',
  kind: 'sandbox',
  skipReason: () => problem,
  create: (create) => new E2BWorkspace(options(create)),
  gc: (gcOptions) => gcE2B({ ...emulated, ...gcOptions }),
  resources: async (workspaceId) =>
    (await sandboxesOf(workspaceId)).map((info) => `${info.sandboxId} ${info.state}`),
  process: {
    module: built,
    exportName: 'E2BWorkspace',
    options,
  },
  orphans: {
    // Closed without destroy: paused, its files kept.
    closed: async (create) => {
      const closed = new E2BWorkspace(options(create));
      await closed.initialize();
      await closed.close();
    },
    // Created with the marks by a service that died before it attached: running, no records.
    stray: async ({ workspaceId, owner }) => {
      await Sandbox.create('base', {
        ...emulated,
        metadata: {
          [WS_LABELS.id]: workspaceId,
          [WS_LABELS.owner]: owner,
          [WS_LABELS.created]: new Date().toISOString(),
        },
      });
    },
  },
  // Without the workspace id: never listed, never touched.
  unmarked: async (owner) => {
    const foreign = await Sandbox.create('base', { ...emulated, metadata: { [WS_LABELS.owner]: owner } });
    return {
      name: foreign.sandboxId,
      exists: async () => (await Sandbox.getInfo(foreign.sandboxId, emulated)).state === 'running',
    };
  },
  records: {
    plant: (workspaceId, name) => runIn(workspaceId, `touch ${ATTACHED}/${name}`),
    age: (workspaceId) => runIn(workspaceId, `touch -d @0 ${ATTACHED}/*`),
  },
  sharedAcrossProcesses: true,
  cleanup: async (tag) => {
    await killOwnedSandboxes(tag, emulated);
  },
});

describe.skipIf(problem !== undefined)('e2bWorkspaces on the emulator', () => {
  it('a manager on the factory opens the sandbox carrying the id, and pauses it on closeAll', async () => {
    const workspaceId = `${generateId().slice(0, 6)}-factory`;
    const states = async () => (await sandboxesOf(workspaceId)).map((info) => info.state);
    const manager = new WorkspaceManager({
      factory: e2bWorkspaces({
        ...emulated,
        owner: factoryOwner,
        gateway: false,
        env: { GREETING: 'hello' },
      }),
    });
    const lease = await manager.acquire({ workspaceId });
    expect(lease.workspace).toBeInstanceOf(E2BWorkspace);
    const result = await lease.workspace.getSandbox().exec(['sh', '-c', 'echo "$GREETING"']);
    expect(result.stdoutText).toBe('hello\n');
    expect(await states()).toEqual(['running']);
    lease.release();
    await manager.closeAll();
    expect(lease.workspace.state).toBe('closed');
    expect(await states()).toEqual(['paused']);
    await manager[Symbol.asyncDispose]();
  }, 120_000);
});
