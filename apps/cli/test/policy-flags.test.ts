import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKEND_TABLE } from '../src/backend-table.js';
import { UsageError } from '../src/cli-args.js';
import { BACKENDS, type BackendName, type FlagValues, resolveSettings } from '../src/settings.js';

// The sandbox policy settings (--cpus, --memory, --pids, --disk, --network, --network-allow,
// --privileges): parsed from flags, WS_* variables and config files, and handed to each backend's
// workspace class as `limits`, `network` and `privileges`.

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'ws-cli-policy-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

async function config(name: string, settings: unknown): Promise<string> {
  const path = join(scratch, name);
  await writeFile(path, JSON.stringify(settings));
  return path;
}

/** The policy part of the settings these flags and variables give. */
function policyOf(flags: FlagValues, env: NodeJS.ProcessEnv = {}) {
  const { limits, network, networkName, privileges } = resolveSettings(flags, env);
  return { limits, network, networkName, privileges };
}

/** The UsageError message resolving these flags throws. */
function usageError(flags: FlagValues, env: NodeJS.ProcessEnv = {}): string {
  try {
    resolveSettings(flags, env);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error(`no usage error for ${JSON.stringify(flags)}`);
}

describe('policy settings: flags', () => {
  it('sets nothing when no policy flag is given', () => {
    expect(policyOf({})).toEqual({
      limits: undefined,
      network: undefined,
      networkName: undefined,
      privileges: undefined,
    });
  });

  it('--cpus, --memory, --pids and --disk are the limits', () => {
    expect(policyOf({ cpus: '0.5', memory: '512', pids: '256', disk: '2G' }).limits).toEqual({
      cpus: 0.5,
      memoryMiB: 512,
      pids: 256,
      diskMiB: 2048,
    });
  });

  it.each([
    ['512', 512],
    ['512M', 512],
    ['512m', 512],
    ['512MiB', 512],
    ['2G', 2048],
    ['1.5G', 1536],
    ['2GB', 2048],
    ['1T', 1_048_576],
  ])('--memory %s is %i MiB', (text, mib) => {
    expect(policyOf({ memory: text }).limits).toEqual({ memoryMiB: mib });
  });

  it.each([
    ['none', 'local'],
    ['full', 'local'],
    ['none', 'docker'],
    ['full', 'k8s'],
  ] as const)('--network %s is the common policy on %s', (network, backend) => {
    expect(policyOf({ backend, network })).toMatchObject({ network, networkName: undefined });
  });

  it('--network NAME is a Docker network on docker', () => {
    expect(policyOf({ backend: 'docker', network: 'bridge' })).toMatchObject({
      network: undefined,
      networkName: 'bridge',
    });
  });

  it('--network-allow is repeatable and takes comma-separated entries', () => {
    expect(
      policyOf({ 'network-allow': ['registry.npmjs.org, 10.0.0.0/8', '*.example.com'] }).network,
    ).toEqual({ allow: ['registry.npmjs.org', '10.0.0.0/8', '*.example.com'] });
  });

  it.each(['hardened', 'standard'])('--privileges %s', (privileges) => {
    expect(policyOf({ privileges }).privileges).toBe(privileges);
  });
});

describe('policy settings: bad values are usage errors', () => {
  const cases: [string, FlagValues, RegExp][] = [
    ['a memory size that is no size', { memory: 'lots' }, /^--memory takes a size in MiB .*not "lots"$/],
    ['a memory size in part MiB', { memory: '0.5M' }, /^--memory takes a size in MiB/],
    ['a memory size below what core allows', { memory: '4' }, /^--memory: limits\.memoryMiB .*at least 6/],
    ['a disk size with an unknown unit', { disk: '10K' }, /^--disk takes a size in MiB/],
    ['no CPUs', { cpus: '0' }, /^--cpus takes a number of CPUs .*not "0"$/],
    ['CPUs that are no number', { cpus: 'two' }, /^--cpus takes a number of CPUs/],
    ['a fraction of a process', { pids: '2.5' }, /^--pids takes a positive whole number/],
    ['fewer processes than core allows', { pids: '4' }, /^--pids: limits\.pids .*at least 8 \(got 4\)$/],
    [
      'a network name on the local backend',
      { network: 'bridge' },
      /^--network takes none or full on the local backend \(a network's name only on docker\), not "bridge"$/,
    ],
    [
      'a network name on the e2b backend',
      { backend: 'e2b', network: 'my-net' },
      /^--network takes none or full on the e2b backend/,
    ],
    ['a malformed Docker network name', { backend: 'docker', network: 'a b' }, /^--network takes none, full/],
    [
      'an allow-list entry that is no host',
      { 'network-allow': ['ok.example.com,not a host'] },
      /^--network-allow: network\.allow .*"not a host" is none of them$/,
    ],
    ['an empty allow-list entry', { 'network-allow': ['a.example.com,'] }, /^--network-allow .*empty entry$/],
    [
      '--network with --network-allow',
      { network: 'full', 'network-allow': ['10.0.0.0/8'] },
      /^--network and --network-allow exclude each other/,
    ],
    ['unknown privileges', { privileges: 'root' }, /^--privileges takes hardened or standard, not "root"$/],
  ];
  it.each(cases)('%s', (_label, flags, message) => {
    expect(usageError(flags)).toMatch(message);
  });
});

describe('policy settings: the environment and the config file', () => {
  it('WS_* variables set every policy setting, below the flags', () => {
    const env = {
      WS_CPUS: '2',
      WS_MEMORY: '1G',
      WS_PIDS: '512',
      WS_DISK: '4096',
      WS_NETWORK_ALLOW: 'a.example.com,10.1.0.0/16',
      WS_PRIVILEGES: 'standard',
    };
    expect(policyOf({}, env)).toEqual({
      limits: { cpus: 2, memoryMiB: 1024, pids: 512, diskMiB: 4096 },
      network: { allow: ['a.example.com', '10.1.0.0/16'] },
      networkName: undefined,
      privileges: 'standard',
    });
    expect(policyOf({ memory: '256', privileges: 'hardened' }, env)).toMatchObject({
      limits: { cpus: 2, memoryMiB: 256, pids: 512, diskMiB: 4096 },
      privileges: 'hardened',
    });
    // A --network flag wins over an allow list from the environment (closer to the command).
    expect(policyOf({ network: 'none' }, env).network).toBe('none');
    expect(policyOf({}, { WS_NETWORK: 'none' }).network).toBe('none');
    expect(usageError({}, { WS_MEMORY: 'big' })).toMatch(/^WS_MEMORY takes a size in MiB/);
    expect(usageError({}, { WS_NETWORK: 'none', WS_NETWORK_ALLOW: '10.0.0.0/8' })).toMatch(
      /^WS_NETWORK and WS_NETWORK_ALLOW exclude each other/,
    );
  });

  it('reads the long flag names from a config file: numbers or strings, a list or one string', async () => {
    const file = await config('policy.json', {
      cpus: 1.5,
      memory: '2G',
      privileges: 'standard',
      docker: { pids: 100, disk: 1024, network: 'ci-net' },
      k8s: { 'network-allow': ['10.0.0.0/8', 'pypi.org'] },
      e2b: { 'network-allow': 'a.example.com, b.example.com' },
    });
    expect(policyOf({ config: file, backend: 'docker' })).toEqual({
      limits: { cpus: 1.5, memoryMiB: 2048, pids: 100, diskMiB: 1024 },
      network: undefined,
      networkName: 'ci-net',
      privileges: 'standard',
    });
    expect(policyOf({ config: file, backend: 'k8s' }).network).toEqual({ allow: ['10.0.0.0/8', 'pypi.org'] });
    expect(policyOf({ config: file, backend: 'e2b' }).network).toEqual({
      allow: ['a.example.com', 'b.example.com'],
    });
    // A flag wins over the file; --network over the file's allow list.
    expect(policyOf({ config: file, backend: 'k8s', network: 'full', memory: '512' })).toMatchObject({
      limits: { cpus: 1.5, memoryMiB: 512 },
      network: 'full',
    });
  });

  const bad: [string, unknown, RegExp][] = [
    ['a memory that is no size', { memory: 'lots' }, /: "memory" takes a size in MiB .*not "lots"$/],
    ['CPUs that are no number', { docker: { cpus: true } }, /: "cpus" must be a number or a string$/],
    ['too few processes', { pids: 2 }, /: "pids": limits\.pids .*at least 8/],
    [
      'an allow list of numbers',
      { 'network-allow': [10] },
      /"network-allow" must be a string or a non-empty/,
    ],
    ['an allow-list entry that is no host', { 'network-allow': 'no host' }, /"no host" is none of them$/],
    ['unknown privileges', { privileges: 'all' }, /: "privileges" takes hardened or standard, not "all"$/],
    [
      'a network name for the local backend',
      { local: { network: 'bridge' } },
      /: "network" takes none or full on the local backend/,
    ],
    [
      'both network and network-allow',
      { network: 'none', 'network-allow': 'a.example.com' },
      /exclude each other/,
    ],
  ];
  it.each(bad.map(([label, settings, message], index) => [label, index, settings, message] as const))(
    'a config file with %s is a usage error naming the file',
    async (_label, index, settings, message) => {
      const file = await config(`bad-policy-${index}.json`, settings);
      const text = usageError({ config: file });
      expect(text).toMatch(message);
      expect(text).toContain(`--config ${file}`);
    },
  );
});

/** A stand-in for each backend's workspace class that keeps the options it was given. */
function recordingModule(): { module: unknown; given: () => Record<string, unknown> } {
  let seen: Record<string, unknown> | undefined;
  class Recorder {
    constructor(options: Record<string, unknown>) {
      seen = options;
    }
  }
  const names = [
    'LocalWorkspace',
    'BubblewrapWorkspace',
    'DockerWorkspace',
    'E2BWorkspace',
    'DaytonaWorkspace',
    'K8sWorkspace',
    'OpenSandboxWorkspace',
  ];
  return {
    module: Object.fromEntries(names.map((name) => [name, Recorder])),
    given: () => {
      if (!seen) throw new Error('no workspace was constructed');
      return seen;
    },
  };
}

/** The options `ws` hands the backend's workspace class for these flags. */
function optionsFor(backend: BackendName, flags: FlagValues): Record<string, unknown> {
  const settings = resolveSettings({ backend, ...flags }, {});
  const { module, given } = recordingModule();
  BACKEND_TABLE[backend].open(module, { common: {}, hostWorkdir: '/tmp/ws-policy-unit', settings });
  return given();
}

describe('policy settings: the options each backend is given', () => {
  const flags: FlagValues = {
    cpus: '1',
    memory: '1G',
    pids: '300',
    disk: '5G',
    'network-allow': ['10.0.0.0/8,registry.npmjs.org'],
    privileges: 'standard',
  };
  it.each(BACKENDS)('%s gets limits, network and privileges', (backend) => {
    expect(optionsFor(backend, flags)).toMatchObject({
      limits: { cpus: 1, memoryMiB: 1024, pids: 300, diskMiB: 5120 },
      network: { allow: ['10.0.0.0/8', 'registry.npmjs.org'] },
      privileges: 'standard',
    });
  });

  it.each(BACKENDS)('%s gets none of them when no policy flag is given', (backend) => {
    const options = optionsFor(backend, {});
    expect(options).not.toHaveProperty('limits');
    expect(options).not.toHaveProperty('network');
    expect(options).not.toHaveProperty('privileges');
  });

  it.each(BACKENDS)('%s gets --network none as network: none', (backend) => {
    expect(optionsFor(backend, { network: 'none' })).toMatchObject({ network: 'none' });
  });

  it('docker gets a network name as its network', () => {
    expect(optionsFor('docker', { network: 'bridge', memory: '256' })).toMatchObject({
      network: 'bridge',
      limits: { memoryMiB: 256 },
    });
  });
});

describe('--user: who commands run as', () => {
  it('comes from --user, else WS_USER, else the config file, checked as core checks it', async () => {
    expect(resolveSettings({ user: 'nobody' }, {}).user).toBe('nobody');
    expect(resolveSettings({}, { WS_USER: '1000:1000' }).user).toBe('1000:1000');
    expect(resolveSettings({ user: '0' }, { WS_USER: 'nobody' }).user).toBe('0');
    const file = await config('user.json', { docker: { user: 'nobody' }, k8s: { user: '1000' } });
    expect(resolveSettings({ config: file, backend: 'docker' }, {}).user).toBe('nobody');
    expect(resolveSettings({ config: file, backend: 'k8s' }, {}).user).toBe('1000');
    expect(resolveSettings({}, {}).user).toBeUndefined();
    expect(usageError({ user: 'Bad User' })).toMatch(/^--user: user "Bad User" is neither a user name/);
    expect(usageError({}, { WS_USER: '1:2:3' })).toMatch(/^WS_USER: user "1:2:3"/);
    expect(usageError({ user: 'x'.repeat(65) })).toMatch(/1 to 64 characters/);
  });
});
