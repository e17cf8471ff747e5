import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isWsError } from '@ws/core';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalWorkspace } from '../src/index.js';

// Node 20's recursive mkdir never settles under /proc: folders are made one level at a time instead.
const proc = existsSync('/proc/self');
if (!proc) console.warn('[host-dirs] skipped: no /proc on this machine');
const scratch = mkdtempSync(join(tmpdir(), 'ws-host-dirs-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function failure(action: () => Promise<unknown>): Promise<unknown> {
  try {
    await action();
  } catch (error) {
    return error;
  }
  throw new Error('expected a failure');
}

describe.skipIf(!proc)('host folders that cannot be made', () => {
  it('fails to open a workdir under /proc at once, with a typed error', async () => {
    const workspace = new LocalWorkspace({ hostWorkdir: '/proc/ws-no-such/workdir' });
    expect(isWsError(await failure(() => workspace.initialize()), 'NOT_FOUND')).toBe(true);
  });

  it('fails a write or mkdir through a link into /proc at once', async () => {
    const workspace = new LocalWorkspace({ hostWorkdir: join(scratch, 'workdir') });
    await workspace.initialize();
    try {
      symlinkSync('/proc', join(scratch, 'workdir', 'proc-link'));
      const sandbox = workspace.getSandbox();
      expect(
        isWsError(await failure(() => sandbox.writeFile('proc-link/ws-no-such/f', 'x')), 'NOT_FOUND'),
      ).toBe(true);
      expect(
        isWsError(
          await failure(() => sandbox.mkdir('proc-link/ws-no-such/d', { recursive: true })),
          'NOT_FOUND',
        ),
      ).toBe(true);
    } finally {
      await workspace.close();
    }
  });
});
