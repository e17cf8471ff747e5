import { generateId, isWsError, type SandboxPolicyOptions } from '@ws/core';
import { Sandbox } from 'e2b';
import { afterAll, describe, expect, it } from 'vitest';
import { e2bPolicy } from '../src/e2b-policy.js';
import { E2BWorkspace, killOwnedSandboxes } from '../src/index.js';
import { connection, emulatorProblem, stopEmulator } from './emulator.js';

/** The error a constructor throws, as `code: message`. */
function refusal(options: SandboxPolicyOptions): string {
  try {
    new E2BWorkspace({ apiKey: 'k', apiUrl: 'http://127.0.0.1:9', ...options });
  } catch (error) {
    if (isWsError(error)) return `${error.code}: ${error.message}`;
    throw error;
  }
  return 'accepted';
}

describe('the policy options as Sandbox.create takes them', () => {
  it('maps no network to allowInternetAccess: false and an allow list to allowOut with all else denied', () => {
    expect(e2bPolicy({ network: 'none' })).toEqual({ allowInternetAccess: false });
    expect(e2bPolicy({ network: { allow: [] } })).toEqual({ allowInternetAccess: false });
    expect(e2bPolicy({ network: 'full' })).toEqual({});
    expect(
      e2bPolicy({ network: { allow: ['10.0.0.0/8', '1.1.1.1', 'Registry.npmjs.org', '*.pypi.org'] } }),
    ).toEqual({
      network: {
        allowOut: ['10.0.0.0/8', '1.1.1.1', 'registry.npmjs.org', '*.pypi.org'],
        denyOut: ['0.0.0.0/0'],
      },
    });
  });

  it('refuses limits and privileges before anything is created, naming why', () => {
    for (const limits of [{ cpus: 1 }, { memoryMiB: 512 }, { diskMiB: 2048 }])
      expect(refusal({ limits })).toMatch(
        /^CAPABILITY_UNSUPPORTED: .*cannot enforce limits\.\w+: .*pick a template/,
      );
    expect(refusal({ limits: { pids: 64 } })).toMatch(/^CAPABILITY_UNSUPPORTED: .*no process limit/);
    for (const privileges of ['hardened', 'standard'] as const)
      expect(refusal({ privileges })).toMatch(/^CAPABILITY_UNSUPPORTED: .*set by the sandbox's template/);
  });

  it('refuses malformed values with INVALID_ARGUMENT', () => {
    expect(refusal({ network: 'offline' } as unknown as SandboxPolicyOptions)).toMatch(/^INVALID_ARGUMENT/);
    expect(refusal({ network: { allow: ['http://x'] } })).toMatch(/^INVALID_ARGUMENT/);
    expect(refusal({ limits: { gpus: 1 } } as SandboxPolicyOptions)).toMatch(/^INVALID_ARGUMENT/);
    expect(refusal({ network: 'none' })).toBe('accepted');
  });
});

// Through the unmodified SDK against the emulator.
const problem = await emulatorProblem();
const owner = `ws-e2b-policy-${generateId().slice(0, 8)}`;
const emulated = problem ? undefined : await connection();

afterAll(async () => {
  if (emulated) await killOwnedSandboxes(owner, emulated).catch(() => []);
  await stopEmulator();
}, 120_000);

describe.skipIf(problem !== undefined)('the policy on the emulator', () => {
  it('reaches E2B as the sandbox network settings, shown by the service', async () => {
    const allowed = new E2BWorkspace({
      ...emulated,
      owner,
      network: { allow: ['10.11.12.0/24', 'registry.npmjs.org'] },
    });
    await allowed.initialize();
    const info = await Sandbox.getInfo(allowed.sandboxId as string, emulated);
    expect(info.network).toMatchObject({
      allowOut: ['10.11.12.0/24', 'registry.npmjs.org'],
      denyOut: ['0.0.0.0/0'],
    });
    await allowed.destroy();
    const offline = new E2BWorkspace({ ...emulated, owner, network: 'none' });
    await offline.initialize();
    expect((await Sandbox.getInfo(offline.sandboxId as string, emulated)).allowInternetAccess).toBe(false);
    await offline.destroy();
  });

  it('refuses egress rules E2B refuses: a denied domain, an allowed domain with other traffic open', async () => {
    await expect(
      Sandbox.create('base', { ...emulated, network: { denyOut: ['example.com'] } }),
    ).rejects.toThrow(/^400: invalid denyOut entry "example.com"/);
    await expect(
      Sandbox.create('base', { ...emulated, network: { allowOut: ['example.com'] } }),
    ).rejects.toThrow(/^400: allowing the domain "example.com" requires denying all other traffic/);
  });
});
