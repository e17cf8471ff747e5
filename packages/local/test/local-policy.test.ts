import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isWsError, type WsError } from '@ws/core';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalWorkspace, type LocalWorkspaceOptions } from '../src/index.js';

const base = mkdtempSync(join(tmpdir(), 'ws-local-policy-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

function thrown(options: Partial<LocalWorkspaceOptions>): WsError {
  try {
    new LocalWorkspace({ hostWorkdir: join(base, 'never'), ...options } as LocalWorkspaceOptions);
  } catch (error) {
    if (isWsError(error)) return error;
    throw error;
  }
  throw new Error(`${JSON.stringify(options)} was taken`);
}

describe('local policy options', () => {
  it('refuses malformed limits, network and privileges with INVALID_ARGUMENT', () => {
    for (const options of [
      { limits: { pids: 1 } },
      { limits: { memory: 100 } },
      { network: 'off' },
      { network: { allow: 'all' } },
      { privileges: 'admin' },
    ] as unknown as Partial<LocalWorkspaceOptions>[])
      expect(thrown(options).code, JSON.stringify(options)).toBe('INVALID_ARGUMENT');
  });

  it('refuses every limit, a network other than full and hardened privileges with CAPABILITY_UNSUPPORTED', () => {
    for (const [options, named] of [
      [{ limits: { cpus: 1 } }, /limits\.cpus/],
      [{ limits: { memoryMiB: 512 } }, /limits\.memoryMiB: an address-space rlimit/],
      [{ limits: { pids: 64 } }, /limits\.pids: the process rlimit counts every process/],
      [{ limits: { diskMiB: 100 } }, /limits\.diskMiB/],
      [{ network: 'none' }, /network: 'none'/],
      [{ network: { allow: ['10.0.0.0/8'] } }, /allow list/],
      [{ privileges: 'hardened' }, /@ws\/bwrap/],
    ] as const) {
      const error = thrown(options as Partial<LocalWorkspaceOptions>);
      expect(error.code, JSON.stringify(options)).toBe('CAPABILITY_UNSUPPORTED');
      expect(error.message).toMatch(/The local backend cannot enforce/);
      expect(error.message).toMatch(named);
    }
  });

  it("takes network: 'full' and privileges: 'standard', what it has anyway", async () => {
    const workspace = await LocalWorkspace.open({
      hostWorkdir: join(base, 'standard'),
      network: 'full',
      privileges: 'standard',
      limits: {},
    });
    expect((await workspace.getSandbox().exec(['echo', 'ran'])).stdoutText).toBe('ran\n');
    await workspace.close();
  });
});
