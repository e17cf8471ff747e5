import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CreateOptions, registerConformanceSuite, requireEngine } from '@ws/contract-tests';
import { generateId } from '@ws/core';
import { checkSandboxPolicy, WS_LABELS } from '@ws/core/backend';
import Docker from 'dockerode';
import { afterAll } from 'vitest';
import { requireDiskLimits } from '../src/docker-policy.js';
import { dockerRuntimeDir } from '../src/docker-provider.js';
import {
  DEFAULT_DOCKER_IMAGE,
  DockerWorkspace,
  type DockerWorkspaceOptions,
  dockerProblem,
  removeOwnedContainers,
} from '../src/index.js';

/** How a conformance run places a workspace's files; each is a test file of its own. */
export type DockerStorage = 'host folder' | 'engine API only' | 'no host folder' | 'named volume';

const SUITE_NAMES: Record<DockerStorage, string> = {
  'host folder': 'docker',
  'engine API only': 'docker (engine API only)',
  'no host folder': 'docker (no host folder)',
  'named volume': 'docker (named volume)',
};

const image = process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE;
// The built package, for the cases that open a workspace in another process (npm test builds it).
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');

/** Whether the engine takes a disk limit: the workspace's own check answers. */
async function diskLimitsHold(engine: Docker): Promise<boolean> {
  return requireDiskLimits(engine, checkSandboxPolicy('test', { limits: { diskMiB: 1024 } })).then(
    () => true,
    () => false,
  );
}

/**
 * Registers the conformance suite on Docker, its workspaces' files placed as `storage` says, in the
 * calling test file: every container of the file carries one owner tag, removed (with the named
 * volumes) after it.
 */
export async function registerDockerConformance(storage: DockerStorage): Promise<void> {
  const base = mkdtempSync(join(tmpdir(), 'ws-docker-conformance-'));
  const owner = `ws-test-${generateId().slice(0, 8)}`;
  const engine = new Docker();

  // What a workspace left, seen from the host: its containers, its runtime folder.
  const leftovers = async (workspaceId: string): Promise<string[]> => {
    const containers = await engine.listContainers({
      all: true,
      filters: { label: [`${WS_LABELS.id}=${workspaceId}`] },
    });
    const found = containers.map((container) => `container ${container.Names[0]} (${container.State})`);
    if (existsSync(dockerRuntimeDir(workspaceId)))
      found.push(`runtime folder ${dockerRuntimeDir(workspaceId)}`);
    return found;
  };

  afterAll(async () => {
    await removeOwnedContainers(owner).catch(() => []);
    // The named-volume run's volumes (destroy() removes them; a failed case may not have got there).
    const { Volumes } = await engine
      .listVolumes()
      .catch(() => ({ Volumes: [] as Docker.VolumeInspectInfo[] }));
    await Promise.all(
      (Volumes ?? [])
        .filter((volume) => volume.Name.startsWith(`${owner}-`))
        .map((volume) =>
          engine
            .getVolume(volume.Name)
            .remove()
            .catch(() => {}),
        ),
    );
    rmSync(base, { recursive: true, force: true });
  }, 120_000);

  // The options of one workspace id, JSON-serialisable so another process can open it too.
  const options = (workspaceId: string): DockerWorkspaceOptions => {
    switch (storage) {
      case 'host folder':
        return { image, owner, workspaceId, hostWorkdir: join(base, workspaceId) };
      // No gateway: every command through the Engine API's exec, every file through the archive
      // API (and core's POSIX fallbacks over exec), as on an image without node.
      case 'engine API only':
        return { image, owner, workspaceId, hostWorkdir: join(base, `bare-${workspaceId}`), gateway: false };
      // The container's own disk: nothing outlives close().
      case 'no host folder':
        return { image, owner, workspaceId };
      // A named volume persists like a host folder and goes with destroy().
      case 'named volume':
        return { image, owner, workspaceId, volume: `${owner}-${workspaceId}` };
    }
  };

  await registerConformanceSuite({
    name: SUITE_NAMES[storage],
    skipReason: async () => requireEngine('docker', await dockerProblem(image)),
    leftovers,
    process: {
      module: built,
      exportName: 'DockerWorkspace',
      options: ({ workspaceId }) => ({ ...options(workspaceId) }),
    },
    // One variant checks that a second owner of an id is refused (the check is the same in all).
    owners: storage === 'host folder',
    // The policy cases in two variants: through the gateway, and through the Engine API alone (the
    // memory case's report must not depend on the gateway); the default process limit once.
    ...(storage === 'host folder' || storage === 'engine API only'
      ? {
          policy: {
            limits: [
              'cpus',
              'memoryMiB',
              'pids',
              ...((await diskLimitsHold(engine)) ? (['diskMiB'] as const) : []),
            ],
            network: ['none', 'full'],
            privileges: ['hardened', 'standard'],
            defaultPids: storage === 'host folder',
          },
        }
      : {}),
    // The image's `nobody`; beside a host folder only for a root host (another host user's folder
    // takes that user's uid alone).
    ...(storage !== 'host folder' || process.getuid?.() === 0
      ? { user: { option: 'nobody', uid: 65534, name: 'nobody' } }
      : {}),
    // The packages area once, where the container runs as the image's root whatever the host user:
    // npm from the image, apt with a root that keeps its capabilities;
    // the image has no python3, so no pip.
    ...(storage === 'no host folder'
      ? {
          packages: {
            npm: true,
            apt: true,
            pip: false,
            aptOptions: { privileges: 'standard' },
          },
        }
      : {}),
    create: ({ workspaceId, secondOwner, ...rest }) =>
      new DockerWorkspace({
        ...rest,
        ...options(workspaceId),
        ...(secondOwner ? { owner: `${owner}-2` } : {}),
      }),
    // The image's node-less twin (built beside it), once: the gateway runs on the host's node there.
    ...(storage === 'no host folder'
      ? {
          nodeless: ({ workspaceId, secondOwner: _, ...rest }: CreateOptions) =>
            new DockerWorkspace({ ...rest, ...options(workspaceId), image: `${image}-bare` }),
        }
      : {}),
  });
}
