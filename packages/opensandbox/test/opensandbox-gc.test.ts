import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConnectionConfig, Sandbox, SandboxManager } from '@alibaba-group/opensandbox';
import { type ReaperCreateOptions, registerReaperSuite } from '@ws/contract-tests';
import { WS_LABELS } from '@ws/core/backend';
import { afterAll, expect } from 'vitest';
import { gcOpenSandbox, killOwnedSandboxes, OpenSandboxWorkspace } from '../src/index.js';
import { connection, emulatorProblem, stopEmulator } from './emulator.js';

// The reaper and scaling out, through the unmodified SDK against the emulator.
const problem = await emulatorProblem();
if (problem) console.warn(`[opensandbox gc] skipped: ${problem}`);
const emulated = problem ? undefined : await connection();
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');

afterAll(async () => {
  await stopEmulator();
}, 120_000);

const config = () => new ConnectionConfig({ domain: emulated?.domain, apiKey: emulated?.apiKey });
const connectionOptions = () => ({ domain: emulated?.domain, apiKey: emulated?.apiKey });

/** Runs a shell command in the sandbox of `workspaceId` through the SDK itself. */
async function runIn(workspaceId: string, command: string): Promise<void> {
  const [sandboxId] = (await sandboxesOf(workspaceId)).map((line) => line.split(' ')[0]);
  if (!sandboxId) throw new Error(`no sandbox carries ${workspaceId}`);
  const handle = await Sandbox.connect({ sandboxId, connectionConfig: config() });
  try {
    expect((await handle.commands.run(command)).exitCode).toBe(0);
  } finally {
    await handle.close();
  }
}

/** The sandboxes carrying `workspaceId` as `id state`, once none is passing between two (pausing…). */
async function sandboxesOf(workspaceId: string): Promise<string[]> {
  const manager = SandboxManager.create({ connectionConfig: config() });
  try {
    for (let attempt = 0; ; attempt++) {
      const found = await manager.listSandboxInfos({
        metadata: { [WS_LABELS.id]: workspaceId },
        pageSize: 100,
      });
      const live = found.items.filter(
        (info) => info.status.state !== 'Terminated' && info.status.state !== 'Failed',
      );
      const passing = live.some((info) => ['Pending', 'Pausing', 'Resuming'].includes(info.status.state));
      if (attempt >= 100 || !passing) return live.map((info) => `${info.id} ${info.status.state}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await manager.close();
  }
}

const options = ({ workspaceId, owner }: ReaperCreateOptions) => ({
  ...(emulated as NonNullable<typeof emulated>),
  owner,
  workspaceId,
  gateway: false,
});

await registerReaperSuite({
  name: 'opensandbox (emulator)',
  kind: 'sandbox',
  skipReason: () => problem,
  create: (create) => new OpenSandboxWorkspace(options(create)),
  gc: (gcOptions) => gcOpenSandbox({ ...connectionOptions(), ...gcOptions }),
  resources: sandboxesOf,
  // The manager hosts open their workspace through the factory.
  process: {
    module: built,
    exportName: 'OpenSandboxWorkspace',
    factoryName: 'openSandboxWorkspaces',
    options,
  },
  orphans: {
    // Closed without destroy: paused, its files kept.
    closed: async (create) => {
      const closed = new OpenSandboxWorkspace(options(create));
      await closed.initialize();
      await closed.close();
    },
    // Created with the marks by a service that died before it attached: running, no records.
    stray: async ({ workspaceId, owner }) => {
      const stray = await Sandbox.create({
        image: emulated?.image as string,
        connectionConfig: config(),
        metadata: {
          [WS_LABELS.id]: workspaceId,
          [WS_LABELS.owner]: owner,
          // Milliseconds, as the backend writes it: the server takes only label values (no colons).
          [WS_LABELS.created]: String(Date.now()),
        },
      });
      await stray.close();
    },
  },
  // Without the workspace id: never listed, never touched.
  unmarked: async (owner) => {
    const foreign = await Sandbox.create({
      image: emulated?.image as string,
      connectionConfig: config(),
      metadata: { [WS_LABELS.owner]: owner },
    });
    await foreign.close();
    return {
      name: foreign.id,
      exists: async () => {
        const manager = SandboxManager.create({ connectionConfig: config() });
        try {
          return (await manager.getSandboxInfo(foreign.id)).status.state === 'Running';
        } finally {
          await manager.close();
        }
      },
    };
  },
  records: {
    plant: (workspaceId, name) => runIn(workspaceId, `touch /root/.ws/attached/${name}`),
    age: (workspaceId) => runIn(workspaceId, 'touch -d @0 /root/.ws/attached/*'),
  },
  sharedAcrossProcesses: true,
  cleanup: async (owner) => {
    await killOwnedSandboxes(owner, connectionOptions());
  },
});
