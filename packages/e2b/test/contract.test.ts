import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { registerConformanceSuite } from '@ws/contract-tests';
import { generateId } from '@ws/core';
import { Sandbox } from 'e2b';
import { afterAll } from 'vitest';
import { E2BWorkspace, killOwnedSandboxes, METADATA } from '../src/index.js';
import { connection, emulatorProblem, stopEmulator } from './emulator.js';

// The whole suite through the unmodified e2b SDK against the emulator: each sandbox a container.
const problem = await emulatorProblem();
// Every sandbox of this run carries this owner tag, so the run can remove what it left.
const owner = `ws-test-${generateId().slice(0, 8)}`;
// The built package, for the cases that open a workspace in another process (npm test builds it).
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');
const emulated = problem ? undefined : await connection();
if (problem) console.warn(`[e2b] skipped: ${problem}`);

// What a workspace left running: a paused sandbox holds its files and runs nothing, as a closed
// persistent workspace's folder does.
async function leftovers(workspaceId: string): Promise<string[]> {
  const running = await Sandbox.list({
    ...emulated,
    query: { metadata: { [METADATA.id]: workspaceId }, state: ['running'] },
  }).nextItems();
  return running.map((info) => `sandbox ${info.sandboxId} (running)`);
}

afterAll(async () => {
  if (emulated) await killOwnedSandboxes(owner, emulated).catch(() => []);
  await stopEmulator();
}, 120_000);

await registerConformanceSuite({
  name: 'e2b (emulator)',
  skipReason: () => problem,
  leftovers,
  process: {
    module: built,
    exportName: 'E2BWorkspace',
    options: ({ workspaceId }) => ({ ...emulated, owner, workspaceId }),
  },
  create: (options) => new E2BWorkspace({ ...options, ...emulated, owner }),
});
