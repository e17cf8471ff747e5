import { describe, expect, it } from 'vitest';
import { withOomReports } from '../src/backend/oom-report.js';
import {
  checkSandboxPolicy,
  completeSandbox,
  createExecResult,
  refuseUnsupportedPolicy,
} from '../src/backend.js';
import { isWsError } from '../src/index.js';

const invalid = (options: Record<string, unknown>) => {
  try {
    checkSandboxPolicy('TestWorkspace', options as never);
  } catch (error) {
    return isWsError(error, 'INVALID_ARGUMENT') ? error.message : `not INVALID_ARGUMENT: ${String(error)}`;
  }
  return undefined;
};

describe('sandbox policy options', () => {
  it('checks limits, sorts an allow list into CIDR blocks and host names, and reads {allow: []} as none', () => {
    expect(
      checkSandboxPolicy('T', {
        limits: { cpus: 0.5, memoryMiB: 512, pids: 64, diskMiB: 100 },
        network: { allow: ['10.0.0.0/8', '192.168.1.1', 'fd00::/8', 'Registry.npmjs.org', '*.example.com'] },
        privileges: 'standard',
      }),
    ).toEqual({
      limits: { cpus: 0.5, memoryMiB: 512, pids: 64, diskMiB: 100 },
      network: {
        kind: 'allow',
        cidrs: ['10.0.0.0/8', '192.168.1.1', 'fd00::/8'],
        hosts: ['registry.npmjs.org', '*.example.com'],
      },
      privileges: 'standard',
    });
    expect(checkSandboxPolicy('T', { network: { allow: [] } }).network).toEqual({ kind: 'none' });
    expect(checkSandboxPolicy('T', {})).toEqual({ limits: {}, network: undefined, privileges: undefined });
  });

  it('refuses malformed values with INVALID_ARGUMENT naming the option', () => {
    expect(invalid({ limits: { memory: 5 } })).toContain('limits has no "memory"');
    expect(invalid({ limits: { memoryMiB: 0 } })).toContain('limits.memoryMiB');
    expect(invalid({ limits: { pids: 10.5 } })).toContain('whole number');
    expect(invalid({ limits: { cpus: Number.NaN } })).toContain('limits.cpus');
    expect(invalid({ limits: [] })).toContain('limits takes an object');
    expect(invalid({ network: 'off' })).toContain("'none', 'full'");
    expect(invalid({ network: { allow: ['10.0.0.0/33'] } })).toContain('10.0.0.0/33');
    expect(invalid({ network: { allow: ['evil host'] } })).toContain('evil host');
    expect(invalid({ network: { allow: ['a'], deny: ['b'] } })).toContain('network is');
    expect(invalid({ privileges: 'root' })).toContain('privileges');
  });

  it('refuses what a backend cannot enforce with CAPABILITY_UNSUPPORTED, first limits, then network, then privileges', () => {
    const support = { limits: ['pids'], network: ['none', 'allow-cidr'], privileges: ['hardened'] } as const;
    const refused = (options: Record<string, unknown>) => {
      try {
        refuseUnsupportedPolicy('Test', checkSandboxPolicy('T', options as never), support, {
          'limits.cpus': 'no cgroup',
        });
      } catch (error) {
        return isWsError(error, 'CAPABILITY_UNSUPPORTED') ? error.message : String(error);
      }
      return undefined;
    };
    expect(refused({ limits: { pids: 64 }, network: 'none', privileges: 'hardened' })).toBeUndefined();
    expect(refused({ network: { allow: ['10.0.0.0/8'] } })).toBeUndefined();
    expect(refused({ limits: { cpus: 1 } })).toBe('The Test backend cannot enforce limits.cpus: no cgroup');
    expect(refused({ network: { allow: ['10.0.0.0/8', 'example.com'] } })).toContain(
      'allow list of host names',
    );
    expect(refused({ network: 'full' })).toContain("network: 'full'");
    expect(refused({ privileges: 'standard' })).toContain("privileges: 'standard'");
  });
});

describe('out-of-memory reports', () => {
  const sandbox = (exitCode: number, kills: number[]) => {
    const counts = [...kills];
    let reads = 0;
    const base = completeSandbox({
      backend: 'memory',
      workdir: '/w',
      capabilities: {
        stat: false,
        list: false,
        remove: false,
        mkdir: false,
        rename: false,
        readStream: false,
        writeStream: false,
        spawn: false,
      },
      exec: async () => createExecResult({ exitCode }),
      readFile: async () => new Uint8Array(),
      writeFile: async () => {},
    });
    return {
      base,
      reads: () => reads,
      oomKills: async () => {
        reads++;
        return counts.shift();
      },
    };
  };

  it('marks a command killed by SIGKILL when the kill count grew, and reads the count only then', async () => {
    const killed = sandbox(137, [0, 1, 1]);
    const reporting = await withOomReports(killed.base, killed.oomKills);
    expect((await reporting.exec(['x'])).outOfMemory).toBe(true);
    // Killed again, but not by the memory limit: the count stayed.
    expect((await reporting.exec(['x'])).outOfMemory).toBeUndefined();
    expect(killed.reads()).toBe(3);

    const fine = sandbox(0, [0]);
    const quiet = await withOomReports(fine.base, fine.oomKills);
    await quiet.exec(['x']);
    await quiet.exec(['x']);
    expect(fine.reads()).toBe(1);
  });
});
