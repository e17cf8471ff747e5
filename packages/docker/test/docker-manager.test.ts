import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ReaperCreateOptions, registerReaperSuite, requireEngine } from '@ws/contract-tests';
import { generateId, WorkspaceManager } from '@ws/core';
import { WS_LABELS } from '@ws/core/backend';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerRuntimeDir } from '../src/docker-provider.js';
import {
  DEFAULT_DOCKER_IMAGE,
  DockerWorkspace,
  dockerProblem,
  gcDocker,
  removeOwnedContainers,
} from '../src/index.js';

const image = process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE;
const problem = requireEngine('docker', await dockerProblem(image));
if (problem) console.warn(`[docker-manager] skipped: ${problem}`);
const docker = new Docker();
// The runtime folders of the reaper suite's workspaces: gc is told where they are.
const hostRuntimeDir = mkdtempSync(join(tmpdir(), 'ws-docker-manager-'));
// Every container of this file's own cases carries this owner tag (the suite has tags of its own).
const owner = `ws-test-mgr-${generateId().slice(0, 8)}`;
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');

afterAll(async () => {
  await removeOwnedContainers(owner).catch(() => []);
  rmSync(hostRuntimeDir, { recursive: true, force: true });
}, 120_000);

const containersOf = async (filter: string[], tag = owner) =>
  docker.listContainers({ all: true, filters: { label: [`${WS_LABELS.owner}=${tag}`, ...filter] } });

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/**
 * Waits until nothing runs in the container any more: the gateway of a killed process ends when its
 * stream closes, a moment after the process died.
 */
async function quiet(workspaceId: string): Promise<void> {
  for (;;) {
    const [info] = await docker.listContainers({
      all: true,
      filters: { label: [`${WS_LABELS.id}=${workspaceId}`] },
    });
    if (!info) return;
    const details = await docker.getContainer(info.Id).inspect();
    const execs = await Promise.all(
      (details.ExecIDs ?? []).map((id) =>
        docker
          .getExec(id)
          .inspect()
          .then(
            (exec) => exec.Running,
            () => false,
          ),
      ),
    );
    if (!execs.includes(true)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

// With the gateway, as a service's workspaces have it: its command in the container must not
// count as a use once its host died.
const options = ({ workspaceId, owner }: ReaperCreateOptions) => ({
  workspaceId,
  image,
  owner,
  hostRuntimeDir,
});

await registerReaperSuite({
  name: 'docker',
  kind: 'container',
  skipReason: () => problem,
  create: (create) => new DockerWorkspace(options(create)),
  gc: (gcOptions) => gcDocker({ ...gcOptions, hostRuntimeDir }),
  // Each container with its runtime folder on this host; a runtime folder left without one.
  resources: async (workspaceId) => {
    const runtime = dockerRuntimeDir(workspaceId, hostRuntimeDir);
    const folder = existsSync(runtime) ? ` (runtime folder ${runtime})` : '';
    const found = await docker.listContainers({
      all: true,
      filters: { label: [`${WS_LABELS.id}=${workspaceId}`] },
    });
    if (found.length === 0) return folder ? [`left${folder}`] : [];
    return found.map((info) => `${info.Names[0]} ${info.State}${folder}`);
  },
  process: { module: built, exportName: 'DockerWorkspace', options },
  afterCrash: quiet,
  // Without this project's workspace label: never listed, never touched.
  unmarked: async (tag) => {
    const created = await docker.createContainer({
      Image: image,
      Cmd: ['sleep', 'infinity'],
      Labels: { [WS_LABELS.owner]: tag },
    });
    const name = (await created.inspect()).Name.replace(/^\//, '');
    return {
      name,
      exists: () =>
        created.inspect().then(
          () => true,
          () => false,
        ),
    };
  },
  sharedAcrossProcesses: true,
  cleanup: async (tag) => {
    const found = await containersOf([], tag);
    await Promise.all(
      found.map((info) =>
        docker
          .getContainer(info.Id)
          .remove({ force: true })
          .catch(() => {}),
      ),
    );
  },
});

describe.skipIf(problem !== undefined)('WorkspaceManager over Docker workspaces', () => {
  it('opens exactly one container per key for 200 concurrent acquires of 10 keys', async () => {
    const run = generateId().slice(0, 6);
    const created: string[] = [];
    await using manager = new WorkspaceManager({
      factory: (workspaceId) => {
        created.push(workspaceId);
        return new DockerWorkspace({ workspaceId, image, owner, gateway: false });
      },
    });
    const leases = await Promise.all(
      Array.from({ length: 200 }, (_, index) =>
        manager.acquire({ userId: `${run}-${index % 10}`, agentId: 'coder' }),
      ),
    );
    expect(created).toHaveLength(10);
    expect(new Set(leases.map((lease) => lease.workspace)).size).toBe(10);
    const containers = await containersOf([]);
    const ours = containers.filter((info) => created.includes(info.Labels[WS_LABELS.id] ?? ''));
    expect(ours).toHaveLength(10);
    expect(new Set(ours.map((info) => info.Labels[WS_LABELS.id])).size).toBe(10);
    for (const lease of leases) lease.release();
    await manager.closeAll();
    expect(
      (await containersOf([])).filter((info) => created.includes(info.Labels[WS_LABELS.id] ?? '')),
    ).toHaveLength(0);
  }, 240_000);

  it('does not delay the other keys while one creation is slow', async () => {
    const run = generateId().slice(0, 6);
    const slow = gate();
    await using manager = new WorkspaceManager({
      factory: async (workspaceId) => {
        if (workspaceId === `${run}-slow`) await slow.promise;
        return new DockerWorkspace({ workspaceId, image, owner, gateway: false });
      },
    });
    const order: string[] = [];
    const acquire = (workspaceId: string) =>
      manager.acquire({ workspaceId }).then((lease) => {
        order.push(workspaceId);
        return lease;
      });
    const slowLease = acquire(`${run}-slow`);
    await Promise.all([1, 2, 3].map((index) => acquire(`${run}-fast-${index}`)));
    expect(order).toHaveLength(3);
    slow.open();
    await slowLease;
    expect(order.at(-1)).toBe(`${run}-slow`);
  }, 240_000);
});
