import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Daytona } from '@daytonaio/sdk';
import { type ConformanceTarget, cleanUpWithin, registerConformanceSuite } from '@ws/contract-tests';
import { generateId } from '@ws/core';
import { WS_LABELS } from '@ws/core/backend';
import { afterAll } from 'vitest';
import { type DaytonaConnection, DaytonaWorkspace, deleteOwnedSandboxes } from '../src/index.js';
import {
  connection,
  emulatorBehindProxy,
  emulatorProblem,
  image,
  networkedConnection,
  startedNetworkedConnection,
  stopEmulator,
} from './emulator.js';

// The built package, for the cases that open a workspace in another process (npm test builds it).
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');

// What a workspace left running: a stopped sandbox holds its files and runs nothing, as a closed
// persistent workspace's folder does.
const leftoversOn =
  (reach: DaytonaConnection | undefined) =>
  async (workspaceId: string): Promise<string[]> => {
    const daytona = new Daytona({ ...reach });
    try {
      const left: string[] = [];
      for await (const sandbox of daytona.list({ labels: { [WS_LABELS.id]: workspaceId } }))
        if (sandbox.state !== 'stopped' && sandbox.state !== 'archived')
          left.push(`sandbox ${sandbox.id} (${sandbox.state})`);
      return left;
    } finally {
      await daytona[Symbol.asyncDispose]();
    }
  };

// Input to a command on Daytona (the gateway's channel included) crosses the toolbox as base64 text,
// one request per MiB, so files move at a few MB/s here: the large-file cases move 16 MiB files (64 MiB
// took 90 s a case); the interrupted-write cases size their writes themselves, up to that.
const largeFileBytes = 16 * 1024 * 1024;

/**
 * Registers the conformance suite (one part of it with `shard`) in the calling test file: through
 * the unmodified @daytonaio/sdk against the emulator, each sandbox a container, and against Daytona
 * itself when a key is given. The file gets its own emulator and owner tag, both removed after it.
 */
export async function registerDaytonaConformance(shard?: ConformanceTarget['shard']): Promise<void> {
  // A live run (npm run test:live) runs the suite against the service alone, under the run's owner tag.
  const live = process.env.WS_LIVE === 'daytona';
  const problem = live ? 'a live run: the emulator is not used' : await emulatorProblem();
  // Every sandbox of the file carries this owner tag, so the file can remove what it left.
  const owner = (live && process.env.WS_LIVE_OWNER) || `ws-test-${generateId().slice(0, 8)}`;
  const emulated = problem ? undefined : await connection();
  if (problem) console.warn(`[daytona] skipped: ${problem}`);

  // Each step bounded: what could not be removed is reported, and the hook never hangs.
  afterAll(async () => {
    const networked = await startedNetworkedConnection();
    const reaches = [emulated, networked].filter((reach) => reach !== undefined);
    await cleanUpWithin([
      ...reaches.flatMap((reach, index) =>
        [owner, `${owner}-2`].map((tag) => ({
          what: `the sandboxes of owner ${tag} on the ${index === 0 ? 'emulator' : 'networked emulator'}`,
          run: () => deleteOwnedSandboxes(tag, reach),
        })),
      ),
      { what: 'the emulator', run: stopEmulator },
    ]);
  }, 120_000);

  await registerConformanceSuite({
    name: 'daytona (emulator)',
    shard,
    owners: true,
    largeFileBytes,
    skipReason: () => problem,
    leftovers: leftoversOn(emulated),
    process: {
      module: built,
      exportName: 'DaytonaWorkspace',
      options: ({ workspaceId }) => ({ ...emulated, owner, workspaceId }),
    },
    create: ({ secondOwner, ...options }) =>
      new DaytonaWorkspace({ ...options, ...emulated, owner: secondOwner ? `${owner}-2` : owner }),
    // The sandbox's OS user other than Daytona's default (`daytona`), with a home of its own.
    user: { option: 'root', uid: 0, name: 'root' },
    // The packages area: npm from the image, as root (Daytona's
    // default user cannot write npm's global prefix); no apt (the sandbox's root has no
    // capabilities), no pip (no python3).
    packages: { npm: true, apt: false, pip: false, options: { user: 'root' } },
    // Limits are the sandbox's resources (container limits here) in whole CPUs and GiB: the area's
    // memory limits (256 and 512 MiB) are refused, so memory is declared unsupported here and its
    // kill is tested in daytona-policy.test.ts with 1 GiB. What the sandbox's user may do is the
    // snapshot's or image's. The emulator cuts a sandbox with networkBlockAll off the network; it
    // records allow lists and filters nothing.
    policy: {
      limits: ['cpus', 'diskMiB'],
      network: ['none', 'full', 'allow-cidr', 'allow-host'],
      privileges: [],
      // From an image (resources apply to such a sandbox only), through an emulator whose sandboxes
      // have a network to lose.
      create: async ({ secondOwner: _, ...options }) =>
        new DaytonaWorkspace({ ...options, ...(await networkedConnection()), owner, image }),
    },
    // An image without node: the gateway runs on the host's, uploaded once per sandbox.
    nodeless: ({ secondOwner: _, ...options }) =>
      new DaytonaWorkspace({ ...options, ...emulated, owner, image: `${image}-bare` }),
    // An emulator of its own behind a proxy the fault cases switch.
    faults: async () => {
      const behind = await emulatorBehindProxy(owner);
      return {
        vendor: 'Daytona',
        set: (mode) => behind.proxy.set(mode),
        get answered() {
          return behind.proxy.answered;
        },
        create: ({ secondOwner: _, ...options }) =>
          new DaytonaWorkspace({ ...options, ...behind.connection, owner, requestTimeoutMs: 2_000 }),
        close: () => behind.stop(),
      };
    },
  });

  // The same suite against Daytona itself in a live run (`npm run test:live -- daytona`, with
  // DAYTONA_API_KEY, and DAYTONA_API_URL for another deployment). Sandboxes are billed while the run
  // lasts; afterAll deletes them, and the live run removes whatever its owner tag still holds.
  const realKey = live ? process.env.DAYTONA_API_KEY : undefined;
  const real = realKey ? { apiKey: realKey, apiUrl: process.env.DAYTONA_API_URL } : undefined;
  await registerConformanceSuite({
    name: 'daytona (Daytona service)',
    shard,
    owners: true,
    largeFileBytes,
    skipReason: () =>
      realKey
        ? undefined
        : 'not a live run: `DAYTONA_API_KEY=… npm run test:live -- daytona` runs it against Daytona itself (sandboxes are billed)',
    leftovers: leftoversOn(real),
    process: {
      module: built,
      exportName: 'DaytonaWorkspace',
      options: ({ workspaceId }) => ({ ...real, owner, workspaceId }),
    },
    create: ({ secondOwner, ...options }) =>
      new DaytonaWorkspace({ ...options, ...real, owner: secondOwner ? `${owner}-2` : owner }),
  });

  afterAll(async () => {
    if (real) for (const tag of [owner, `${owner}-2`]) await deleteOwnedSandboxes(tag, real).catch(() => []);
  }, 120_000);
}
