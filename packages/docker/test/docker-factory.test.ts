import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireEngine } from '@ws/contract-tests';
import { generateId, isWsError, WorkspaceManager } from '@ws/core';
import { WS_LABELS } from '@ws/core/backend';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_DOCKER_IMAGE,
  DockerWorkspace,
  dockerProblem,
  dockerWorkspaces,
  removeOwnedContainers,
} from '../src/index.js';

const image = process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE;
const problem = requireEngine('docker', await dockerProblem(image));
if (problem) console.warn(`[docker-factory] skipped: ${problem}`);
const base = mkdtempSync(join(tmpdir(), 'ws-docker-factory-'));
// Every container of this file carries this owner tag: cleanup touches nothing else.
const owner = `ws-test-factory-${generateId().slice(0, 8)}`;

afterAll(async () => {
  if (!problem) await removeOwnedContainers(owner).catch(() => []);
  rmSync(base, { recursive: true, force: true });
}, 120_000);

describe.skipIf(problem !== undefined)('dockerWorkspaces', () => {
  it('is a factory a WorkspaceManager opens and closes containers with, files in <baseDir>/<id>', async () => {
    const docker = new Docker();
    const manager = new WorkspaceManager({
      factory: dockerWorkspaces({ baseDir: base, image, owner, env: { GREETING: 'hello' } }),
    });
    const workspaceId = `factory-${generateId().slice(0, 8)}`;
    const lease = await manager.acquire({ workspaceId });
    expect(lease.workspace).toBeInstanceOf(DockerWorkspace);
    const result = await lease.workspace
      .getSandbox()
      .exec(['sh', '-c', 'echo "$GREETING" > note.txt && pwd']);
    expect(result.stdoutText).toBe('/workspace\n');
    expect(readFileSync(join(base, workspaceId, 'note.txt'), 'utf8')).toBe('hello\n');
    const running = await docker.listContainers({
      filters: { label: [`${WS_LABELS.owner}=${owner}`, `${WS_LABELS.id}=${workspaceId}`] },
    });
    expect(running).toHaveLength(1);
    lease.release();
    await manager.closeAll();
    expect(lease.workspace.state).toBe('closed');
    const left = await docker.listContainers({
      all: true,
      filters: { label: [`${WS_LABELS.owner}=${owner}`] },
    });
    expect(left).toEqual([]);
    await manager[Symbol.asyncDispose]();
    // The files stay on the host.
    expect(readFileSync(join(base, workspaceId, 'note.txt'), 'utf8')).toBe('hello\n');
  }, 120_000);

  it('refuses an empty baseDir and, from the factory, an id that is not one path segment', () => {
    for (const make of [
      () => dockerWorkspaces({ baseDir: '' }),
      () => dockerWorkspaces({ baseDir: base })('..', { signal: new AbortController().signal }),
    ]) {
      let error: unknown;
      try {
        make();
      } catch (thrown) {
        error = thrown;
      }
      expect(isWsError(error, 'INVALID_ARGUMENT'), String(error)).toBe(true);
    }
  });
});
