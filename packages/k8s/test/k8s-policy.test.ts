import { WsError } from '@ws/core';
import { describe, expect, it } from 'vitest';
import { K8sWorkspace } from '../src/index.js';
import { MANAGED_BY, MANAGED_BY_LABEL, workspaceKey } from '../src/names.js';
import { networkPolicyManifest, resolvePodPolicy } from '../src/pod-policy.js';
import { CONTAINER_NAME, podManifest } from '../src/pod-spec.js';

// The sandbox policy options as the Pod and its NetworkPolicy spell them: no cluster needed.
const base = { image: 'node:22', storageSize: '1Gi', owner: 'ws', timeoutMs: 1_000 };
const containerOf = (policy: Parameters<typeof resolvePodPolicy>[1]) => {
  const resolved = resolvePodPolicy('K8sWorkspace', policy);
  const pod = podManifest({ name: 'ws-a' }, 'ws-a', { ...base, ...resolved });
  const container = pod.spec?.containers.find((item) => item.name === CONTAINER_NAME);
  if (!container) throw new Error('no container');
  return container;
};

function thrown(run: () => unknown): WsError {
  try {
    run();
  } catch (error) {
    if (error instanceof WsError) return error;
    throw error;
  }
  throw new Error('did not throw');
}

describe('K8s sandbox policy: the Pod', () => {
  it('maps limits onto the container resource limits (requests default to them)', () => {
    const container = containerOf({ limits: { cpus: 0.5, memoryMiB: 512, diskMiB: 2048 } });
    expect(container.resources).toEqual({
      limits: { cpu: '500m', memory: '512Mi', 'ephemeral-storage': '2048Mi' },
    });
    expect(containerOf({ limits: { cpus: 2 } }).resources).toEqual({ limits: { cpu: '2000m' } });
  });

  it('keeps the native resources, adds the limits to them, and refuses one limit given twice', () => {
    const resources = { requests: { cpu: '100m' }, limits: { cpu: '1' } };
    expect(containerOf({ resources, limits: { memoryMiB: 256 } }).resources).toEqual({
      requests: { cpu: '100m' },
      limits: { cpu: '1', memory: '256Mi' },
    });
    expect(containerOf({ resources }).resources).toEqual(resources);
    expect(containerOf({}).resources).toBeUndefined();
    const error = thrown(() => resolvePodPolicy('K8sWorkspace', { resources, limits: { cpus: 1 } }));
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toMatch(/limits\.cpus and resources\.limits\.cpu/);
  });

  it('is hardened by default and with hardened; standard leaves the runtime its defaults', () => {
    const hardened = { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } };
    expect(containerOf({}).securityContext).toEqual(hardened);
    expect(containerOf({ privileges: 'hardened' }).securityContext).toEqual(hardened);
    expect(containerOf({ privileges: 'standard' }).securityContext).toBeUndefined();
  });

  it('refuses pids and host names with CAPABILITY_UNSUPPORTED, and malformed values as invalid', () => {
    const pids = thrown(() => new K8sWorkspace({ limits: { pids: 64 } }));
    expect(pids.code).toBe('CAPABILITY_UNSUPPORTED');
    expect(pids.message).toMatch(/cannot enforce limits\.pids: a Pod has no process limit/);
    const hosts = thrown(
      () => new K8sWorkspace({ network: { allow: ['10.0.0.0/8', 'registry.npmjs.org'] } }),
    );
    expect(hosts.code).toBe('CAPABILITY_UNSUPPORTED');
    expect(hosts.message).toMatch(/host names/);
    for (const options of [
      { limits: { memoryMiB: 1.5 } },
      { limits: { cpus: 0 } },
      { limits: { gpus: 1 } },
      { network: 'offline' },
      { network: { allow: ['not a host!'] } },
      { privileges: 'root' },
    ])
      expect(thrown(() => new K8sWorkspace(options as never)).code, JSON.stringify(options)).toBe(
        'INVALID_ARGUMENT',
      );
  });

  it('accepts what it enforces without any I/O', () => {
    for (const options of [
      { limits: { cpus: 1, memoryMiB: 512, diskMiB: 1024 } },
      { network: 'none' as const },
      { network: 'full' as const },
      { network: { allow: ['10.11.12.0/24', '192.168.1.1'] } },
      { privileges: 'standard' as const },
    ])
      expect(new K8sWorkspace({ kubeconfig: '/nonexistent', ...options })).toBeInstanceOf(K8sWorkspace);
  });
});

describe('K8s user: the Pod', () => {
  const podOf = (user: string) => {
    const resolved = resolvePodPolicy('K8sWorkspace', { user });
    return podManifest({ name: 'ws-a' }, 'ws-a', { ...base, ...resolved });
  };

  it('maps uid:gid onto runAsUser, runAsGroup and the Pod fsGroup, beside the hardened context', () => {
    const pod = podOf('1000:2000');
    expect(pod.spec?.securityContext).toEqual({ fsGroup: 2000 });
    expect(pod.spec?.containers[0]?.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      runAsUser: 1000,
      runAsGroup: 2000,
    });
    const alone = podOf('65534');
    expect(alone.spec?.securityContext).toEqual({ fsGroup: 65534 });
    expect(alone.spec?.containers[0]?.securityContext?.runAsUser).toBe(65534);
    expect(alone.spec?.containers[0]?.securityContext?.runAsGroup).toBeUndefined();
    // No user: no Pod securityContext at all.
    const none = podManifest({ name: 'ws-a' }, 'ws-a', { ...base, ...resolvePodPolicy('K8sWorkspace', {}) });
    expect(none.spec?.securityContext).toBeUndefined();
  });

  it('refuses a name (the API takes numbers) and a malformed user with INVALID_ARGUMENT', () => {
    const named = thrown(() => new K8sWorkspace({ user: 'nobody' }));
    expect(named.code).toBe('INVALID_ARGUMENT');
    expect(named.message).toMatch(/Kubernetes needs a numeric id/);
    for (const user of ['1:2:3', '', 'A', '1000\n'])
      expect(thrown(() => new K8sWorkspace({ user })).code, JSON.stringify(user)).toBe('INVALID_ARGUMENT');
  });
});

describe('K8s sandbox policy: the NetworkPolicy', () => {
  const metadata = { name: 'ws-a', namespace: 'default', labels: { [MANAGED_BY_LABEL]: MANAGED_BY } };
  const selector = { matchLabels: { [MANAGED_BY_LABEL]: MANAGED_BY, 'ws.workspace.key': workspaceKey('a') } };

  it("denies a Pod all ingress and egress for network: 'none'", () => {
    const network = resolvePodPolicy('K8sWorkspace', { network: 'none' }).network;
    if (network?.kind !== 'none') throw new Error(`not none: ${JSON.stringify(network)}`);
    expect(networkPolicyManifest(metadata, 'a', network)).toEqual({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata,
      spec: { podSelector: selector, policyTypes: ['Ingress', 'Egress'], ingress: [], egress: [] },
    });
    // An empty allow list is no network.
    expect(resolvePodPolicy('K8sWorkspace', { network: { allow: [] } }).network).toEqual({ kind: 'none' });
  });

  it('allows the egress of an allow list as ipBlocks (a single address as its /32 or /128)', () => {
    const network = resolvePodPolicy('K8sWorkspace', {
      network: { allow: ['10.11.12.0/24', '192.168.1.1', 'fd00::1'] },
    }).network;
    if (network?.kind !== 'allow') throw new Error(`not allow: ${JSON.stringify(network)}`);
    expect(networkPolicyManifest(metadata, 'a', network).spec?.egress).toEqual([
      {
        to: [
          { ipBlock: { cidr: '10.11.12.0/24' } },
          { ipBlock: { cidr: '192.168.1.1/32' } },
          { ipBlock: { cidr: 'fd00::1/128' } },
        ],
      },
    ]);
  });

  it("has no NetworkPolicy for network: 'full' or by default", () => {
    expect(resolvePodPolicy('K8sWorkspace', { network: 'full' }).network).toEqual({ kind: 'full' });
    expect(resolvePodPolicy('K8sWorkspace', {}).network).toBeUndefined();
  });
});
