import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { requireEngine } from '@ws/contract-tests';
import { generateId, isWsError } from '@ws/core';
import { WS_LABELS } from '@ws/core/backend';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerRuntimeDir } from '../src/docker-provider.js';
import { DEFAULT_DOCKER_IMAGE, DockerWorkspace, dockerProblem, removeOwnedContainers } from '../src/index.js';

const image = process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE;
const problem = requireEngine('docker', await dockerProblem(image));
if (problem) console.warn(`[docker-lifecycle] skipped: ${problem}`);
if (problem) console.warn(`[docker] skipped: ${problem}`);
const docker = new Docker();
const base = mkdtempSync(join(tmpdir(), 'ws-docker-life-'));
const owner = `ws-test-${generateId().slice(0, 8)}`;
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');

afterAll(async () => {
  await removeOwnedContainers(owner).catch(() => []);
  rmSync(base, { recursive: true, force: true });
}, 120_000);

async function rejection(action: () => Promise<unknown>): Promise<unknown> {
  try {
    await action();
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

const containersOf = async (workspaceId: string) =>
  docker.listContainers({ all: true, filters: { label: [`${WS_LABELS.id}=${workspaceId}`] } });

describe.skipIf(problem !== undefined)('docker lifecycle', () => {
  for (const storage of ['hostWorkdir', 'volume'] as const) {
    it(`recovers from a container removed from outside, files intact (${storage})`, async () => {
      const workspaceId = `removed-${storage}-${generateId().slice(0, 6)}`;
      const where =
        storage === 'hostWorkdir'
          ? { hostWorkdir: join(base, workspaceId) }
          : { volume: `ws-test-${workspaceId}` };
      const workspace = await DockerWorkspace.open({ image, owner, workspaceId, ...where });
      try {
        await workspace.getSandbox().writeFile('kept.txt', 'survives');
        expect(
          isWsError(await rejection(() => workspace.getSandbox().readFile('missing.txt')), 'NOT_FOUND'),
        ).toBe(true);
        await docker.getContainer(workspace.containerName).remove({ force: true });
        const failure = await rejection(() => workspace.getSandbox().readFile('kept.txt'));
        expect(isWsError(failure, 'BACKEND_UNAVAILABLE'), String(failure)).toBe(true);
        const bash = (await workspace.listTools()).find((tool) => tool.name === 'Bash')!;
        expect((await bash.call({ command: 'true' })).isError).toBe(true);
        await workspace.initialize();
        expect(new TextDecoder().decode(await workspace.getSandbox().readFile('kept.txt'))).toBe('survives');
        expect((await bash.call({ command: 'cat kept.txt' })).content).toEqual([
          { type: 'text', text: 'survives' },
        ]);
        expect(await containersOf(workspaceId)).toHaveLength(1);
      } finally {
        await workspace.destroy();
      }
      expect(await containersOf(workspaceId)).toHaveLength(0);
      if (storage === 'volume') {
        const volumes = await docker.listVolumes();
        expect(volumes.Volumes?.some((volume) => volume.Name === `ws-test-${workspaceId}`)).toBe(false);
      }
    }, 120_000);
  }

  it('puts two workspace objects with one id, in two processes, on one container', async () => {
    if (!existsSync(built)) throw new Error(`${built} is missing: build the packages first (npm test does)`);
    const workspaceId = `shared-${generateId().slice(0, 6)}`;
    const hostWorkdir = join(base, workspaceId);
    const script = `
      import { DockerWorkspace } from ${JSON.stringify(built)};
      const workspace = await DockerWorkspace.open({ image: ${JSON.stringify(image)}, owner: ${JSON.stringify(owner)}, workspaceId: ${JSON.stringify(workspaceId)}, hostWorkdir: ${JSON.stringify(hostWorkdir)} });
      await workspace.getSandbox().writeFile('from-' + process.argv[1] + '.txt', process.argv[1]);
      console.log(workspace.containerName);
      process.exit(0);
    `;
    const run = (label: string) =>
      new Promise<string>((resolve, reject) => {
        const child = spawn(process.execPath, ['--input-type=module', '-e', script, label], {
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        let err = '';
        child.stdout.on('data', (chunk) => {
          out += chunk;
        });
        child.stderr.on('data', (chunk) => {
          err += chunk;
        });
        child.once('close', (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(err))));
      });
    const names = await Promise.all([run('a'), run('b')]);
    expect(names[0]).toBe(names[1]);
    expect(await containersOf(workspaceId)).toHaveLength(1);
    expect(readFileSync(join(hostWorkdir, 'from-a.txt'), 'utf8')).toBe('a');
    expect(readFileSync(join(hostWorkdir, 'from-b.txt'), 'utf8')).toBe('b');
  }, 120_000);

  for (const gateway of [true, false]) {
    it(`closes by removing the container and keeping the bind-mounted files; re-attaches to a running one (gateway: ${gateway})`, async () => {
      const workspaceId = `closing-${generateId().slice(0, 6)}`;
      const hostWorkdir = join(base, workspaceId);
      const first = await DockerWorkspace.open({ image, owner, workspaceId, hostWorkdir, gateway });
      const second = await DockerWorkspace.open({ image, owner, workspaceId, hostWorkdir, gateway });
      await first.getSandbox().writeFile('a.txt', 'one');
      await first.close();
      // The other object still uses the container, so it stays.
      expect(new TextDecoder().decode(await second.getSandbox().readFile('a.txt'))).toBe('one');
      await second.close();
      expect(await containersOf(workspaceId)).toHaveLength(0);
      expect(readFileSync(join(hostWorkdir, 'a.txt'), 'utf8')).toBe('one');
    }, 120_000);
  }

  it('removes the containers of one owner tag and no others, keeping their files', async () => {
    const workspaceId = `reaped-${generateId().slice(0, 6)}`;
    const hostWorkdir = join(base, workspaceId);
    const otherOwner = `${owner}-reap`;
    const workspace = await DockerWorkspace.open({ image, owner: otherOwner, workspaceId, hostWorkdir });
    const bystander = await DockerWorkspace.open({ image, owner, workspaceId: `${workspaceId}-b` });
    try {
      await workspace.getSandbox().writeFile('kept.txt', 'kept');
      const runtime = dockerRuntimeDir(workspaceId);
      expect(existsSync(runtime)).toBe(true);
      expect(await removeOwnedContainers(otherOwner)).toEqual([workspace.containerName]);
      expect(existsSync(runtime)).toBe(false);
      expect(existsSync(dockerRuntimeDir(`${workspaceId}-b`))).toBe(true);
      expect(await containersOf(workspaceId)).toHaveLength(0);
      expect(await containersOf(`${workspaceId}-b`)).toHaveLength(1);
      expect(readFileSync(join(hostWorkdir, 'kept.txt'), 'utf8')).toBe('kept');
    } finally {
      await bystander.close();
      await workspace.close().catch(() => {});
    }
  }, 120_000);

  it('forgets a user whose process died without closing (no gateway)', async () => {
    if (!existsSync(built)) throw new Error(`${built} is missing: build the packages first (npm test does)`);
    const workspaceId = `dead-user-${generateId().slice(0, 6)}`;
    const hostWorkdir = join(base, workspaceId);
    const script = `
      import { DockerWorkspace } from ${JSON.stringify(built)};
      await DockerWorkspace.open({ image: ${JSON.stringify(image)}, owner: ${JSON.stringify(owner)}, workspaceId: ${JSON.stringify(workspaceId)}, hostWorkdir: ${JSON.stringify(hostWorkdir)}, gateway: false });
      process.kill(process.pid, 'SIGKILL');
    `;
    await new Promise<void>((resolve) =>
      spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'ignore' }).once('close', () =>
        resolve(),
      ),
    );
    expect(await containersOf(workspaceId)).toHaveLength(1);
    const workspace = await DockerWorkspace.open({ image, owner, workspaceId, hostWorkdir, gateway: false });
    await workspace.close();
    expect(await containersOf(workspaceId)).toHaveLength(0);
  }, 120_000);
});
