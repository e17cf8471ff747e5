import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireEngine } from '@ws/contract-tests';
import { generateId, isWsError } from '@ws/core';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerPolicy, policyHostConfig } from '../src/docker-policy.js';
import { DEFAULT_DOCKER_IMAGE, DockerWorkspace, dockerProblem, removeOwnedContainers } from '../src/index.js';

const refusal = (options: Record<string, unknown>) => {
  try {
    new DockerWorkspace(options as never);
  } catch (error) {
    return error;
  }
  return undefined;
};

// Construction does no I/O: these run without a Docker engine.
describe('Docker sandbox policy options', () => {
  it('maps limits, the network and privileges to HostConfig; hardened with a process limit by default', () => {
    expect(policyHostConfig(dockerPolicy({}))).toEqual({
      PidsLimit: 2048,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
    });
    expect(
      policyHostConfig(
        dockerPolicy({
          limits: { cpus: 1.5, memoryMiB: 512, pids: 100, diskMiB: 1024 },
          network: 'none',
          privileges: 'standard',
        }),
      ),
    ).toEqual({
      PidsLimit: 100,
      NanoCpus: 1_500_000_000,
      Memory: 512 * 1024 * 1024,
      MemorySwap: 512 * 1024 * 1024,
      StorageOpt: { size: '1024M' },
      NetworkMode: 'none',
    });
    expect(policyHostConfig(dockerPolicy({ network: 'full' })).NetworkMode).toBeUndefined();
    expect(policyHostConfig(dockerPolicy({ network: 'my-net' })).NetworkMode).toBe('my-net');
  });

  it('refuses malformed values with INVALID_ARGUMENT and an allow list with CAPABILITY_UNSUPPORTED', () => {
    for (const options of [
      { limits: { memoryMiB: -1 } },
      { limits: { pids: 1.5 } },
      { limits: { cpu: 1 } },
      { limits: 'big' },
      { network: { allow: ['not a host'] } },
      { network: 'bad name' },
      { privileges: 'root' },
    ]) {
      const error = refusal(options);
      expect(isWsError(error, 'INVALID_ARGUMENT'), `${JSON.stringify(options)}: ${String(error)}`).toBe(true);
    }
    const error = refusal({ network: { allow: ['10.0.0.0/8'] } });
    expect(isWsError(error, 'CAPABILITY_UNSUPPORTED'), String(error)).toBe(true);
    expect((error as Error).message).toContain('allow list');
  });
});

const image = process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE;
const reason = requireEngine('docker', await dockerProblem(image));

describe.skipIf(reason)('Docker sandbox policy in a container', () => {
  const owner = `ws-test-${generateId().slice(0, 8)}`;
  const base = mkdtempSync(join(tmpdir(), 'ws-docker-policy-'));
  const open = (workspaceId: string, extra: Record<string, unknown> = {}) =>
    DockerWorkspace.open({ image, owner, workspaceId, hostWorkdir: join(base, workspaceId), ...extra });
  afterAll(async () => {
    await removeOwnedContainers(owner).catch(() => []);
    rmSync(base, { recursive: true, force: true });
  }, 60_000);

  // A package of one file built in the container: apt-get installs it without a network.
  const INSTALL = `set -e
mkdir -p pkg/DEBIAN pkg/usr/share/ws-probe
printf 'Package: ws-probe\\nVersion: 1.0\\nArchitecture: all\\nMaintainer: ws <ws@example.invalid>\\nDescription: probe\\n' > pkg/DEBIAN/control
echo installed > pkg/usr/share/ws-probe/marker
dpkg-deb --build pkg ws-probe.deb >/dev/null
apt-get install -y ./ws-probe.deb >/dev/null 2>apt.err || { cat apt.err >&2; exit 1; }
cat /usr/share/ws-probe/marker`;

  it("installs a package with apt-get under privileges: 'standard', and fails cleanly without it", async () => {
    await using standard = await open(`std-${generateId().slice(0, 8)}`, { privileges: 'standard' });
    const done = await standard.getSandbox().exec(['/bin/sh', '-c', INSTALL], {
      cwd: standard.workdir,
      timeoutMs: 120_000,
    });
    expect(done.exitCode, done.stderrText).toBe(0);
    expect(done.stdoutText.trim()).toBe('installed');

    await using hardened = await open(`hard-${generateId().slice(0, 8)}`);
    const refused = await hardened.getSandbox().exec(['/bin/sh', '-c', INSTALL], {
      cwd: hardened.workdir,
      timeoutMs: 120_000,
    });
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderrText).toMatch(/denied|not permitted|Operation not permitted|are you root/i);
    // Nothing half-installed, and the workspace goes on working.
    const after = await hardened
      .getSandbox()
      .exec(['/bin/sh', '-c', 'test ! -e /usr/share/ws-probe/marker && echo clean']);
    expect(after.stdoutText.trim()).toBe('clean');
  }, 240_000);

  it('applies changed limits to a running container found by name; refuses another network or privileges', async () => {
    const workspaceId = `re-${generateId().slice(0, 8)}`;
    await using first = await open(workspaceId, { limits: { pids: 64 } });
    const engine = new Docker();
    const container = engine.getContainer((first as DockerWorkspace).containerName);
    expect((await container.inspect()).HostConfig.PidsLimit).toBe(64);
    // A second object on the same id with another process limit: updated live, the first keeps working.
    await using second = await open(workspaceId, { limits: { pids: 128, memoryMiB: 300 } });
    const host = (await container.inspect()).HostConfig;
    expect([host.PidsLimit, host.Memory]).toEqual([128, 300 * 1024 * 1024]);
    expect((await second.getSandbox().exec(['true'])).exitCode).toBe(0);
    for (const other of [{ network: 'none' }, { privileges: 'standard' }]) {
      const error = await open(workspaceId, other).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(isWsError(error, 'CONFLICT'), `${JSON.stringify(other)}: ${String(error)}`).toBe(true);
    }
    expect((await first.getSandbox().exec(['true'])).exitCode).toBe(0);
  }, 120_000);
});
