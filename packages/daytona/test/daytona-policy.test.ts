import { Daytona } from '@daytonaio/sdk';
import { generateId, isWsError, type SandboxPolicyOptions } from '@ws/core';
import { afterAll, describe, expect, it } from 'vitest';
import { daytonaPolicy } from '../src/daytona-policy.js';
import { DaytonaWorkspace, deleteOwnedSandboxes } from '../src/index.js';
import { connection, emulatorProblem, image, stopEmulator } from './emulator.js';

/** The error a constructor throws, as `code: message`. */
function refusal(options: SandboxPolicyOptions & { image?: string; resources?: object }): string {
  try {
    new DaytonaWorkspace({ apiKey: 'k', apiUrl: 'http://127.0.0.1:9/api', ...options });
  } catch (error) {
    if (isWsError(error)) return `${error.code}: ${error.message}`;
    throw error;
  }
  return 'accepted';
}

describe('the policy options as daytona.create takes them', () => {
  it('maps limits to resources in whole CPUs and GiB, merged with the native resources', () => {
    expect(
      daytonaPolicy({ limits: { cpus: 2, memoryMiB: 2048, diskMiB: 10_240 } }, undefined, 'img'),
    ).toEqual({
      params: { resources: { cpu: 2, memory: 2, disk: 10 } },
      memoryLimited: true,
    });
    expect(daytonaPolicy({ limits: { cpus: 1 } }, { disk: 5 }, 'img')).toEqual({
      params: { resources: { cpu: 1, disk: 5 } },
      memoryLimited: false,
    });
    expect(daytonaPolicy({}, { memory: 4 }, 'img').memoryLimited).toBe(true);
    expect(daytonaPolicy({}, undefined, undefined)).toEqual({ params: {}, memoryLimited: false });
  });

  it('maps the network: none blocks all, an allow list splits into address blocks and domains', () => {
    expect(daytonaPolicy({ network: 'none' }, undefined, undefined).params).toEqual({
      networkBlockAll: true,
    });
    expect(daytonaPolicy({ network: 'full' }, undefined, undefined).params).toEqual({});
    expect(daytonaPolicy({ network: { allow: [] } }, undefined, undefined).params).toEqual({
      networkBlockAll: true,
    });
    expect(
      daytonaPolicy(
        { network: { allow: ['10.0.0.0/8', '1.2.3.4', 'Registry.npmjs.org', '*.pypi.org'] } },
        undefined,
        undefined,
      ).params,
    ).toEqual({
      networkAllowList: '10.0.0.0/8,1.2.3.4/32',
      domainAllowList: 'registry.npmjs.org,*.pypi.org',
    });
  });

  it('refuses what Daytona cannot enforce before anything is created, naming why', () => {
    expect(refusal({ limits: { pids: 100 } })).toMatch(
      /^CAPABILITY_UNSUPPORTED: .*limits\.pids: Daytona has no process limit/,
    );
    expect(refusal({ privileges: 'hardened' })).toMatch(
      /^CAPABILITY_UNSUPPORTED: .*privileges: 'hardened': .*snapshot or image/,
    );
    expect(refusal({ privileges: 'standard' })).toMatch(/^CAPABILITY_UNSUPPORTED/);
    expect(refusal({ limits: { memoryMiB: 1024 } })).toMatch(
      /^CAPABILITY_UNSUPPORTED: .*limits\.memoryMiB: .*created from an image/,
    );
    expect(refusal({ image, limits: { memoryMiB: 512 } })).toMatch(
      /^CAPABILITY_UNSUPPORTED: .*whole GiB \(not 512 MiB\)/,
    );
    expect(refusal({ image, limits: { cpus: 0.5 } })).toMatch(
      /^CAPABILITY_UNSUPPORTED: .*whole CPUs \(not 0\.5\)/,
    );
    expect(refusal({ network: { allow: ['fd00::/8'] } })).toMatch(
      /^CAPABILITY_UNSUPPORTED: .*IPv4 address blocks only/,
    );
    const six = Array.from({ length: 6 }, (_, index) => `10.0.${index}.0/24`);
    expect(refusal({ network: { allow: six } })).toMatch(
      /^CAPABILITY_UNSUPPORTED: .*6 address blocks: it takes at most 5/,
    );
  });

  it('refuses malformed values and a limit given twice with INVALID_ARGUMENT', () => {
    expect(refusal({ image, limits: { memoryMiB: 1024 }, resources: { memory: 1 } })).toMatch(
      /^INVALID_ARGUMENT: Give limits\.memoryMiB or resources\.memory, not both/,
    );
    expect(refusal({ limits: { memoryMiB: -1 } })).toMatch(/^INVALID_ARGUMENT/);
    expect(refusal({ network: { allow: ['not a host!'] } } as SandboxPolicyOptions)).toMatch(
      /^INVALID_ARGUMENT/,
    );
    expect(refusal({ privileges: 'root' } as unknown as SandboxPolicyOptions)).toMatch(/^INVALID_ARGUMENT/);
    expect(refusal({ image, limits: { cpus: 2, memoryMiB: 1024 }, network: 'none' })).toBe('accepted');
  });
});

// Through the unmodified SDK against the emulator.
const problem = await emulatorProblem();
const owner = `ws-daytona-policy-${generateId().slice(0, 8)}`;
const emulated = problem ? undefined : await connection();

afterAll(async () => {
  if (emulated) await deleteOwnedSandboxes(owner, emulated).catch(() => []);
  await stopEmulator();
}, 120_000);

describe.skipIf(problem !== undefined)('the policy on the emulator', () => {
  it('reaches Daytona as the sandbox resources and network settings, shown by the service', async () => {
    const daytona = new Daytona(emulated);
    try {
      const workspace = new DaytonaWorkspace({
        ...emulated,
        owner,
        image,
        limits: { cpus: 1, memoryMiB: 2048, diskMiB: 4096 },
        network: { allow: ['10.11.12.0/24', 'registry.npmjs.org'] },
      });
      await workspace.initialize();
      const sandbox = await daytona.get(workspace.sandboxId as string);
      expect(sandbox).toMatchObject({
        cpu: 1,
        memory: 2,
        disk: 4,
        networkBlockAll: false,
        networkAllowList: '10.11.12.0/24',
        domainAllowList: 'registry.npmjs.org',
      });
      await workspace.destroy();
    } finally {
      await daytona[Symbol.asyncDispose]();
    }
  });

  it('a command past the memory limit is killed and reported out of memory; the next one works', async () => {
    const workspace = new DaytonaWorkspace({ ...emulated, owner, image, limits: { memoryMiB: 1024 } });
    await workspace.initialize();
    const sandbox = workspace.getSandbox();
    // Two GiB at once: well past the limit.
    const result = await sandbox.exec(['perl', '-e', '$x = "a" x 2_000_000_000; print length $x'], {
      timeoutMs: 200_000,
    });
    expect(result.stdoutText).not.toContain('2000000000');
    expect(result.outOfMemory).toBe(true);
    expect((await sandbox.exec(['echo', 'after'])).stdoutText).toBe('after\n');
    await workspace.destroy();
  }, 300_000);
});
