import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isWsError, WorkspaceManager } from '@ws/core';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalWorkspace, localWorkspaces } from '../src/index.js';

const base = mkdtempSync(join(tmpdir(), 'ws-local-factory-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe('localWorkspaces', () => {
  it('is a factory a WorkspaceManager opens and closes workspaces with, each in <baseDir>/<id>', async () => {
    const manager = new WorkspaceManager({
      factory: localWorkspaces({ baseDir: base, env: { GREETING: 'hello' } }),
    });
    const lease = await manager.acquire({ userId: 'u1', agentId: 'coder' });
    const workspaceId = manager.assignWorkspaceId({ userId: 'u1', agentId: 'coder' });
    expect(lease.workspaceId).toBe(workspaceId);
    expect(lease.workspace).toBeInstanceOf(LocalWorkspace);
    // The shared options reach every workspace.
    const result = await lease.workspace
      .getSandbox()
      .exec(['sh', '-c', 'echo "$GREETING" > note.txt && pwd']);
    expect(result.stdoutText).toBe(`${join(base, workspaceId)}\n`);
    expect(readFileSync(join(base, workspaceId, 'note.txt'), 'utf8')).toBe('hello\n');
    lease.release();
    await manager.closeAll();
    expect(manager.stats()).toMatchObject({ open: 0, closing: 0 });
    expect(lease.workspace.state).toBe('closed');
    // Opened again (a restarted service), the id finds its files.
    const again = await manager.get({ workspaceId });
    expect((await again.getSandbox().readFile('note.txt')).byteLength).toBe(6);
    await manager[Symbol.asyncDispose]();
    expect(again.state).toBe('closed');
    expect(existsSync(join(base, workspaceId, 'note.txt'))).toBe(true);
  });

  it('refuses a missing baseDir, an id that is not one path segment and an unknown option', () => {
    const context = { signal: new AbortController().signal };
    for (const make of [
      () => localWorkspaces({ baseDir: '' }),
      () => localWorkspaces(undefined as never),
      () => localWorkspaces({ baseDir: base })('..', context),
      () => localWorkspaces({ baseDir: base })('a/b', context),
      () => localWorkspaces({ baseDir: base, image: 'x' } as never)('a', context),
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
