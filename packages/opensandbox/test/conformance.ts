import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConnectionConfig, SandboxManager } from '@alibaba-group/opensandbox';
import { type ConformanceTarget, cleanUpWithin, registerConformanceSuite } from '@ws/contract-tests';
import { generateId } from '@ws/core';
import { WS_LABELS } from '@ws/core/backend';
import { afterAll } from 'vitest';
import { killOwnedSandboxes, OpenSandboxWorkspace } from '../src/index.js';
import { OPENSANDBOX_POLICY_SUPPORT } from '../src/sandbox-policy.js';
import {
  connection,
  type EmulatorConnection,
  emulatorProblem,
  faultProxy,
  image,
  networkedConnection,
  stopEmulator,
} from './emulator.js';

// The built package, for the cases that open a workspace in another process (npm test builds it).
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');

// What a workspace left running: a paused sandbox holds its files and runs nothing, as a closed
// persistent workspace's folder does.
const leftoversOn =
  (options: { apiKey?: string | undefined; domain?: string | undefined } | undefined) =>
  async (workspaceId: string): Promise<string[]> => {
    const manager = SandboxManager.create({ connectionConfig: new ConnectionConfig(options ?? {}) });
    try {
      const listed = await manager.listSandboxInfos({
        metadata: { [WS_LABELS.id]: workspaceId },
        states: ['Running', 'Pending', 'Resuming'],
      });
      return listed.items
        .filter((info) => info.metadata?.[WS_LABELS.id] === workspaceId)
        .map((info) => `sandbox ${info.id} (${info.status.state})`);
    } finally {
      await manager.close();
    }
  };

// Files cross execd as JSON text, and the gateway's channel adds base64, each byte through three
// Node processes: the large-file cases move 16 MiB files; the interrupted-write cases size their
// writes themselves, up to that.
const largeFileBytes = 16 * 1024 * 1024;

/**
 * Registers the conformance suite (one part of it with `shard`) in the calling test file: through
 * the unmodified OpenSandbox SDK against the emulator, each sandbox a container, and against an
 * OpenSandbox server when one is given. The file gets its own emulator and owner tag, both removed
 * after it.
 */
export async function registerOpenSandboxConformance(shard?: ConformanceTarget['shard']): Promise<void> {
  // A live run (npm run test:live) runs the suite against the service alone, under the run's owner tag.
  const live = process.env.WS_LIVE === 'opensandbox';
  const problem = live ? 'a live run: the emulator is not used' : await emulatorProblem();
  // Every sandbox of the file carries this owner tag, so the file can remove what it left.
  const owner = (live && process.env.WS_LIVE_OWNER) || `ws-test-${generateId().slice(0, 8)}`;
  const emulated = problem ? undefined : await connection();
  if (problem) console.warn(`[opensandbox] skipped: ${problem}`);

  // The emulator of the policy area's sandboxes, once that area started it.
  let networked: EmulatorConnection | undefined;
  // Each step bounded: what could not be removed is reported, and the hook never hangs.
  afterAll(async () => {
    const reaches = [emulated, networked].filter((reach) => reach !== undefined);
    await cleanUpWithin([
      ...reaches.flatMap((reach) =>
        [owner, `${owner}-2`].map((tag) => ({
          what: `the sandboxes of owner ${tag} on ${reach.domain ?? 'the emulator'}`,
          run: () => killOwnedSandboxes(tag, reach),
        })),
      ),
      { what: 'the emulator', run: stopEmulator },
    ]);
  }, 120_000);

  await registerConformanceSuite({
    name: 'opensandbox (emulator)',
    shard,
    owners: true,
    largeFileBytes,
    skipReason: () => problem,
    leftovers: leftoversOn(emulated),
    process: {
      module: built,
      exportName: 'OpenSandboxWorkspace',
      options: ({ workspaceId }) => ({ ...emulated, owner, workspaceId }),
    },
    create: ({ secondOwner, ...options }) =>
      new OpenSandboxWorkspace({ ...options, ...emulated, owner: secondOwner ? `${owner}-2` : owner }),
    // Refused: commands run as the image's user (see OpenSandboxWorkspace's USER_HINT).
    user: 'refused',
    // The packages area: npm from the image; no apt (the sandbox's
    // root has no capabilities), no pip (no python3).
    packages: { npm: true, apt: false, pip: false },
    // What the emulator enforces (no allow list is filtered: the area checks none). The area's
    // sandboxes get an emulator whose sandboxes have a network to lose.
    policy: {
      ...OPENSANDBOX_POLICY_SUPPORT,
      create: async (options) => {
        networked ??= await networkedConnection();
        return new OpenSandboxWorkspace({ ...options, ...networked, owner });
      },
    },
    // An image without node: the gateway runs on the host's, uploaded once per sandbox.
    nodeless: ({ secondOwner: _, ...options }) =>
      new OpenSandboxWorkspace({ ...options, ...emulated, owner, image: `${image}-bare` }),
    // Every connection of the file passes the emulator's proxy; the fault cases switch it.
    faults: async () => ({
      vendor: 'OpenSandbox',
      set: (mode) => faultProxy().set(mode),
      get answered() {
        return faultProxy().answered;
      },
      create: ({ secondOwner: _, ...options }) =>
        new OpenSandboxWorkspace({ ...options, ...emulated, owner, requestTimeoutMs: 2_000 }),
      close: async () => faultProxy().set('pass'),
    }),
  });

  // The same suite against an OpenSandbox server in a live run (`npm run test:live -- opensandbox`,
  // with OPEN_SANDBOX_DOMAIN and OPEN_SANDBOX_API_KEY; OPEN_SANDBOX_IMAGE for an image with node, else
  // AgentScope's default).
  const realDomain = live ? process.env.OPEN_SANDBOX_DOMAIN : undefined;
  const realKey = process.env.OPEN_SANDBOX_API_KEY;
  const real = realDomain && realKey ? { domain: realDomain, apiKey: realKey } : undefined;
  const realImage = process.env.OPEN_SANDBOX_IMAGE;
  // No policy area here: the egress sidecar leaves the sandbox its interface (the area's no-network
  // case looks for loopback alone), and how far it holds depends on the server's egress mode.
  await registerConformanceSuite({
    name: 'opensandbox (OpenSandbox server)',
    shard,
    owners: true,
    largeFileBytes,
    skipReason: () =>
      real
        ? undefined
        : 'not a live run: `OPEN_SANDBOX_DOMAIN=… OPEN_SANDBOX_API_KEY=… npm run test:live -- opensandbox` runs it against that server',
    leftovers: leftoversOn(real),
    process: {
      module: built,
      exportName: 'OpenSandboxWorkspace',
      options: ({ workspaceId }) => ({
        ...real,
        ...(realImage ? { image: realImage } : {}),
        owner,
        workspaceId,
      }),
    },
    create: ({ secondOwner, ...options }) =>
      new OpenSandboxWorkspace({
        ...options,
        ...real,
        ...(realImage ? { image: realImage } : {}),
        owner: secondOwner ? `${owner}-2` : owner,
      }),
  });

  afterAll(async () => {
    if (real) for (const tag of [owner, `${owner}-2`]) await killOwnedSandboxes(tag, real).catch(() => []);
  }, 120_000);
}
