import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { requireEngine } from '@ws/contract-tests';
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
const base = mkdtempSync(join(tmpdir(), 'ws-docker-manager-'));
// Every container of this file carries this owner tag: cleanup and gc touch nothing else.
const owner = `ws-test-mgr-${generateId().slice(0, 8)}`;
const here = dirname(fileURLToPath(import.meta.url));
const builtDocker = join(here, '..', 'dist', 'index.js');
const builtCore = join(here, '..', '..', 'core', 'dist', 'index.js');

afterAll(async () => {
  await removeOwnedContainers(owner).catch(() => []);
  rmSync(base, { recursive: true, force: true });
}, 120_000);

const containersOf = async (filter: string[]) =>
  docker.listContainers({ all: true, filters: { label: [`${WS_LABELS.owner}=${owner}`, ...filter] } });

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** Runs an ES module in its own node process; resolves with the process and its first stdout line. */
function runScript(
  script: string,
): Promise<{ child: ChildProcess; line: string; closed: Promise<number | null> }> {
  if (!existsSync(builtDocker) || !existsSync(builtCore))
    throw new Error('The packages are not built: build them first (npm test does)');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const closed = new Promise<number | null>((done) => child.once('close', done));
    let out = '';
    let err = '';
    child.stderr?.on('data', (chunk) => {
      err += chunk;
    });
    child.stdout?.on('data', (chunk) => {
      out += chunk;
      const newline = out.indexOf('\n');
      if (newline >= 0) resolve({ child, line: out.slice(0, newline), closed });
    });
    child.once('close', (code) => reject(new Error(`exited with ${code} before answering: ${err}`)));
  });
}

/**
 * Waits until nothing runs in the container any more: the gateway of a killed process ends when its
 * stream closes, a moment after the process died.
 */
async function quiet(workspaceId: string): Promise<void> {
  for (;;) {
    const [info] = await containersOf([`${WS_LABELS.id}=${workspaceId}`]);
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

/** A script whose manager opens the workspace `workspaceId` (or `request`), prints its container, then `after`. */
function managerScript(request: Record<string, string>, after: string): string {
  return `
    import { WorkspaceManager } from ${JSON.stringify(builtCore)};
    import { DockerWorkspace } from ${JSON.stringify(builtDocker)};
    const manager = new WorkspaceManager({
      factory: (workspaceId) => new DockerWorkspace({ workspaceId, image: ${JSON.stringify(image)}, owner: ${JSON.stringify(owner)} }),
    });
    const lease = await manager.acquire(${JSON.stringify(request)});
    console.log(lease.workspace.containerName);
    ${after}
  `;
}

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

  it('puts two managers in two processes asking for one workspace on one container', async () => {
    const request = { userId: `u-${generateId().slice(0, 6)}`, agentId: 'coder' };
    const workspaceId = new WorkspaceManager({ factory: () => undefined as never }).assignWorkspaceId(
      request,
    );
    // Each holds its lease until its stdin closes, then closes its manager.
    const hold = `
      await new Promise((resolve) => { process.stdin.on('data', () => {}); process.stdin.on('end', resolve); });
      await manager[Symbol.asyncDispose]();
    `;
    const [first, second] = await Promise.all([
      runScript(managerScript(request, hold)),
      runScript(managerScript(request, hold)),
    ]);
    expect(first.line).toBe(second.line);
    expect(await containersOf([`${WS_LABELS.id}=${workspaceId}`])).toHaveLength(1);
    first.child.stdin?.end();
    expect(await first.closed).toBe(0);
    // The other process still uses it.
    expect(await containersOf([`${WS_LABELS.id}=${workspaceId}`])).toHaveLength(1);
    second.child.stdin?.end();
    expect(await second.closed).toBe(0);
    expect(await containersOf([`${WS_LABELS.id}=${workspaceId}`])).toHaveLength(0);
  }, 240_000);

  it('gc removes an orphan older than the age and keeps a young one and a leased one', async () => {
    const run = generateId().slice(0, 6);
    const orphanId = `${run}-orphan`;
    const youngId = `${run}-young`;
    const leasedId = `${run}-leased`;
    // A service that crashed holding its workspace: the process dies without closing anything.
    const crash = "process.kill(process.pid, 'SIGKILL');";
    const orphan = await runScript(managerScript({ workspaceId: orphanId }, crash));
    await orphan.closed.catch(() => {});
    await using manager = new WorkspaceManager({
      factory: (workspaceId) => new DockerWorkspace({ workspaceId, image, owner }),
    });
    await using leased = await manager.acquire({ workspaceId: leasedId });
    const boundary = Date.now();
    const young = await runScript(managerScript({ workspaceId: youngId }, crash));
    await young.closed.catch(() => {});
    await Promise.all([quiet(orphanId), quiet(youngId)]);
    // Everything created before the boundary is older than the age; the young one was created after it.
    const olderThanMs = Date.now() - boundary;

    const dry = await gcDocker({ owner, olderThanMs, dryRun: true });
    expect(dry.removed.map((resource) => resource.workspaceId)).toEqual([orphanId]);
    expect(await containersOf([`${WS_LABELS.id}=${orphanId}`])).toHaveLength(1);

    const report = await gcDocker({ owner, olderThanMs });
    expect(report.dryRun).toBe(false);
    expect(report.removed.map((resource) => [resource.kind, resource.workspaceId])).toEqual([
      ['container', orphanId],
    ]);
    const kept = Object.fromEntries(report.kept.map((resource) => [resource.workspaceId, resource.reason]));
    expect(kept).toEqual({ [youngId]: 'young', [leasedId]: 'in-use' });
    expect(await containersOf([`${WS_LABELS.id}=${orphanId}`])).toHaveLength(0);
    expect(existsSync(dockerRuntimeDir(orphanId))).toBe(false);
    expect(await containersOf([`${WS_LABELS.id}=${youngId}`])).toHaveLength(1);
    expect(leased.workspace.state).toBe('ready');
    expect((await leased.workspace.getSandbox().exec(['true'])).exitCode).toBe(0);

    // With no age, the young orphan goes too; the leased one never does while it is open.
    const again = await gcDocker({ owner, olderThanMs: 0 });
    expect(again.removed.map((resource) => resource.workspaceId)).toEqual([youngId]);
    expect(again.kept.map((resource) => [resource.workspaceId, resource.reason])).toEqual([
      [leasedId, 'in-use'],
    ]);
  }, 240_000);
});
