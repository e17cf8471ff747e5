import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { registerConformanceSuite } from '@ws/contract-tests';
import { generateId } from '@ws/core';
import Docker from 'dockerode';
import { afterAll } from 'vitest';
import {
  DEFAULT_DOCKER_IMAGE,
  DockerWorkspace,
  dockerProblem,
  dockerRuntimeDir,
  LABELS,
  removeOwnedContainers,
} from '../src/index.js';

const image = process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE;
const base = mkdtempSync(join(tmpdir(), 'ws-docker-conformance-'));
// Every container of this run carries this owner tag, so the run can remove what it left.
const owner = `ws-test-${generateId().slice(0, 8)}`;
// The built package, for the cases that open a workspace in another process (npm test builds it).
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');

// What a workspace left, seen from the host: its containers, its runtime folder.
const engine = new Docker();
async function leftovers(workspaceId: string): Promise<string[]> {
  const containers = await engine.listContainers({
    all: true,
    filters: { label: [`${LABELS.id}=${workspaceId}`] },
  });
  const found = containers.map((container) => `container ${container.Names[0]} (${container.State})`);
  if (existsSync(dockerRuntimeDir(workspaceId)))
    found.push(`runtime folder ${dockerRuntimeDir(workspaceId)}`);
  return found;
}

afterAll(async () => {
  await removeOwnedContainers(owner).catch(() => []);
  // The named-volume run's volumes (destroy() removes them; a failed case may not have got there).
  const { Volumes } = await engine.listVolumes().catch(() => ({ Volumes: [] as Docker.VolumeInspectInfo[] }));
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

await registerConformanceSuite({
  name: 'docker',
  skipReason: () => dockerProblem(image),
  leftovers,
  process: {
    module: built,
    exportName: 'DockerWorkspace',
    options: ({ workspaceId }) => ({ image, owner, hostWorkdir: join(base, workspaceId), workspaceId }),
  },
  create: ({ workspaceId, ...options }) =>
    new DockerWorkspace({ ...options, image, owner, hostWorkdir: join(base, workspaceId), workspaceId }),
});

// The same suite with no gateway: every command through the Engine API's exec, every file through
// the archive API (and core's POSIX fallbacks over exec), as on an image without node.
await registerConformanceSuite({
  name: 'docker (engine API only)',
  skipReason: () => dockerProblem(image),
  leftovers,
  process: {
    module: built,
    exportName: 'DockerWorkspace',
    options: ({ workspaceId }) => ({
      image,
      owner,
      hostWorkdir: join(base, `bare-${workspaceId}`),
      workspaceId,
      gateway: false,
    }),
  },
  create: ({ workspaceId, ...options }) =>
    new DockerWorkspace({
      ...options,
      image,
      owner,
      hostWorkdir: join(base, `bare-${workspaceId}`),
      workspaceId,
      gateway: false,
    }),
});

// The same suite on the container's own disk (no host folder): nothing outlives close(), and the
// cases that need files to persist say so and skip.
await registerConformanceSuite({
  name: 'docker (no host folder)',
  skipReason: () => dockerProblem(image),
  leftovers,
  process: {
    module: built,
    exportName: 'DockerWorkspace',
    options: ({ workspaceId }) => ({ image, owner, workspaceId }),
  },
  create: ({ workspaceId, ...options }) => new DockerWorkspace({ ...options, image, owner, workspaceId }),
});

// The same suite on a named volume, which persists like a host folder and goes with destroy().
await registerConformanceSuite({
  name: 'docker (named volume)',
  skipReason: () => dockerProblem(image),
  leftovers,
  process: {
    module: built,
    exportName: 'DockerWorkspace',
    options: ({ workspaceId }) => ({ image, owner, volume: `${owner}-${workspaceId}`, workspaceId }),
  },
  create: ({ workspaceId, ...options }) =>
    new DockerWorkspace({ ...options, image, owner, volume: `${owner}-${workspaceId}`, workspaceId }),
});
