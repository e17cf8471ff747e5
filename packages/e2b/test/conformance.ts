import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ConformanceTarget, cleanUpWithin, registerConformanceSuite } from '@ws/contract-tests';
import { generateId } from '@ws/core';
import { WS_LABELS } from '@ws/core/backend';
import { startFaultProxy } from '@ws/emulators';
import { Sandbox } from 'e2b';
import { afterAll } from 'vitest';
import { E2BWorkspace, killOwnedSandboxes } from '../src/index.js';
import {
  connection,
  emulatorProblem,
  networkedConnection,
  startedNetworkedConnection,
  stopEmulator,
} from './emulator.js';

// The built package, for the cases that open a workspace in another process (npm test builds it).
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');

// What a workspace left running: a paused sandbox holds its files and runs nothing, as a closed
// persistent workspace's folder does.
const leftoversOn =
  (connection: { apiKey?: string; apiUrl?: string; sandboxUrl?: string } | undefined) =>
  async (workspaceId: string): Promise<string[]> => {
    const running = await Sandbox.list({
      ...connection,
      query: { metadata: { [WS_LABELS.id]: workspaceId }, state: ['running'] },
    }).nextItems();
    return running.map((info) => `sandbox ${info.sandboxId} (running)`);
  };

// Output and files through E2B cross the SDK's JSON stream as base64 (the gateway's channel adds its
// own), each byte through three Node processes (this one, the emulator's, the gateway's): about
// 9 MB/s here, and as much CPU time as the transfer takes. The output-cap case streams 128 MiB: the
// SDK holds a subscription's output until the gateway's stream rotates (every 16 Mi characters, two
// subscriptions overlapping), which keeps up to ~45 MiB alive whatever the output's size, so the
// output must be larger than twice that for holding it to stand out. The large-file cases move
// 16 MiB files; the interrupted-write cases size their writes themselves, up to that.
const largeOutputBytes = 128 * 1024 * 1024;
const largeFileBytes = 16 * 1024 * 1024;

/**
 * Registers the conformance suite (one part of it with `shard`) in the calling test file: through
 * the unmodified e2b SDK against the emulator, each sandbox a container, and against E2B itself
 * when a key is given. The file gets its own emulator and owner tag, both removed after it.
 */
export async function registerE2BConformance(shard?: ConformanceTarget['shard']): Promise<void> {
  // A live run (npm run test:live) runs the suite against the service alone, under the run's owner tag.
  const live = process.env.WS_LIVE === 'e2b';
  const problem = live ? 'a live run: the emulator is not used' : await emulatorProblem();
  // Every sandbox of the file carries this owner tag, so the file can remove what it left.
  const owner = (live && process.env.WS_LIVE_OWNER) || `ws-test-${generateId().slice(0, 8)}`;
  const emulated = problem ? undefined : await connection();
  if (problem) console.warn(`[e2b] skipped: ${problem}`);

  // Each step bounded: what could not be removed is reported, and the hook never hangs.
  afterAll(async () => {
    const networked = await startedNetworkedConnection();
    const reaches = [emulated, networked].filter((reach) => reach !== undefined);
    await cleanUpWithin([
      ...reaches.flatMap((reach, index) =>
        [owner, `${owner}-2`].map((tag) => ({
          what: `the sandboxes of owner ${tag} on the ${index === 0 ? 'emulator' : 'networked emulator'}`,
          run: () => killOwnedSandboxes(tag, reach),
        })),
      ),
      { what: 'the emulator', run: stopEmulator },
    ]);
  }, 120_000);

  await registerConformanceSuite({
    name: 'e2b (emulator)',
    shard,
    owners: true,
    largeOutputBytes,
    largeFileBytes,
    skipReason: () => problem,
    leftovers: leftoversOn(emulated),
    process: {
      module: built,
      exportName: 'E2BWorkspace',
      options: ({ workspaceId }) => ({ ...emulated, owner, workspaceId }),
    },
    create: ({ secondOwner, ...options }) =>
      new E2BWorkspace({ ...options, ...emulated, owner: secondOwner ? `${owner}-2` : owner }),
    // CPUs, memory, disk and what commands may do are the template's. The emulator cuts a sandbox
    // without internet access off the network; it records an allow list and filters nothing.
    policy: {
      limits: [],
      network: ['none', 'full', 'allow-cidr', 'allow-host'],
      privileges: [],
      // Through an emulator whose sandboxes have a network to lose.
      create: async ({ secondOwner: _, ...options }) =>
        new E2BWorkspace({ ...options, ...(await networkedConnection()), owner }),
    },
    // E2B's other user (its default is `user`); the emulator's image has no `user` account, so
    // another one (`nobody`) could not write /home/user as E2B's templates let `user` do.
    user: { option: 'root', uid: 0, name: 'root' },
    // The packages area: npm from the image; no apt (the sandbox's
    // root has no capabilities), no pip (no python3).
    packages: { npm: true, apt: false, pip: false },
    // A template whose image has no node: the gateway runs on the host's, uploaded once per sandbox.
    nodeless: ({ secondOwner: _, ...options }) =>
      new E2BWorkspace({ ...options, ...emulated, owner, template: 'ws-workspace:bookworm-bare' }),
    // The control plane and envd (one port on the emulator) behind a proxy the fault cases switch.
    faults: async () => {
      const proxy = await startFaultProxy(Number(new URL(emulated!.apiUrl).port));
      return {
        vendor: 'E2B',
        retriesUnseen: "E2B's SDK sends a request refused with 429 again by itself (its `retries` option)",
        set: (mode) => proxy.set(mode),
        get answered() {
          return proxy.answered;
        },
        create: ({ secondOwner: _, ...options }) =>
          new E2BWorkspace({
            ...options,
            ...emulated,
            apiUrl: proxy.url,
            sandboxUrl: proxy.url,
            owner,
            requestTimeoutMs: 2_000,
          }),
        close: () => proxy.close(),
      };
    },
  });

  // The same suite against E2B itself in a live run (`npm run test:live -- e2b`, with E2B_API_KEY, and
  // E2B_DOMAIN or E2B_API_URL for another deployment). Sandboxes are billed while the run lasts;
  // afterAll kills them, and the live run removes whatever its owner tag still holds.
  const realKey = live ? process.env.E2B_API_KEY : undefined;
  await registerConformanceSuite({
    name: 'e2b (E2B service)',
    shard,
    owners: true,
    largeOutputBytes,
    largeFileBytes,
    skipReason: () =>
      realKey
        ? undefined
        : 'not a live run: `E2B_API_KEY=… npm run test:live -- e2b` runs it against E2B itself (sandboxes are billed)',
    leftovers: leftoversOn(realKey ? { apiKey: realKey } : undefined),
    process: {
      module: built,
      exportName: 'E2BWorkspace',
      options: ({ workspaceId }) => ({ apiKey: realKey, owner, workspaceId }),
    },
    create: ({ secondOwner, ...options }) =>
      new E2BWorkspace({ ...options, apiKey: realKey ?? '', owner: secondOwner ? `${owner}-2` : owner }),
  });

  afterAll(async () => {
    if (realKey)
      for (const tag of [owner, `${owner}-2`])
        await killOwnedSandboxes(tag, { apiKey: realKey }).catch(() => []);
  }, 120_000);
}
