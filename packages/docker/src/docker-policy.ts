import { type NetworkPolicy, WsError } from '@ws/core';
import {
  checkSandboxPolicy,
  DEFAULT_PIDS_LIMIT,
  type PolicySupport,
  policyUnsupported,
  type ResolvedPolicy,
  refuseUnsupportedPolicy,
} from '@ws/core/backend';
import type Docker from 'dockerode';

/** What Docker enforces: every limit (disk where the storage driver can), no allow lists, both privilege settings. */
const DOCKER_POLICY_SUPPORT: PolicySupport = {
  limits: ['cpus', 'memoryMiB', 'pids', 'diskMiB'],
  network: ['none', 'full'],
  privileges: ['hardened', 'standard'],
};

const WHY = {
  'network.allow-cidr':
    'a container cannot be held to an allow list without a filtering proxy or firewall in front of it; use network: "none", or a user-defined network (network: "<name>") whose egress you control',
  'network.allow-host':
    'a container cannot be held to an allow list without a filtering proxy or firewall in front of it; use network: "none", or a user-defined network (network: "<name>") whose egress you control',
};

/** The sandbox policy of a Docker workspace: the checked common options and Docker's own network mode. */
export interface DockerPolicy {
  readonly policy: ResolvedPolicy;
  /** A Docker network mode given by name (`bridge`, a user-defined network); undefined for the common spelling. */
  readonly networkMode: string | undefined;
}

/**
 * Checks a Docker workspace's `limits`, `network` and `privileges`: `network` is the common policy
 * (`'none'`, `'full'`) or a Docker network's name.
 * @throws WsError `INVALID_ARGUMENT` for a malformed value; `CAPABILITY_UNSUPPORTED` for an allow list.
 */
export function dockerPolicy(options: {
  limits?: unknown;
  network?: NetworkPolicy | string;
  privileges?: unknown;
}): DockerPolicy {
  const { network } = options;
  const named = typeof network === 'string' && network !== 'none' && network !== 'full';
  if (named && (network.length === 0 || /[\s/\\\0]/.test(network)))
    throw new WsError(
      'INVALID_ARGUMENT',
      `DockerWorkspace: network ${JSON.stringify(network)} is not a network name`,
      {
        details: { option: 'network' },
      },
    );
  const policy = checkSandboxPolicy('DockerWorkspace', {
    ...(options.limits !== undefined ? { limits: options.limits as never } : {}),
    ...(network !== undefined && !named ? { network: network as NetworkPolicy } : {}),
    ...(options.privileges !== undefined ? { privileges: options.privileges as never } : {}),
  });
  refuseUnsupportedPolicy('Docker', policy, DOCKER_POLICY_SUPPORT, WHY);
  return { policy, networkMode: named ? network : undefined };
}

/** The resource part of a container's HostConfig for the limits asked (the process limit always set). */
function resources(policy: ResolvedPolicy): Docker.HostConfig {
  const { cpus, memoryMiB, pids } = policy.limits;
  return {
    PidsLimit: pids ?? DEFAULT_PIDS_LIMIT,
    ...(cpus !== undefined ? { NanoCpus: Math.round(cpus * 1e9) } : {}),
    // No swap beyond the limit: past it, the kernel kills a process of the container.
    ...(memoryMiB !== undefined
      ? { Memory: memoryMiB * 1024 * 1024, MemorySwap: memoryMiB * 1024 * 1024 }
      : {}),
  };
}

/**
 * The HostConfig entries of the policy: limits, the network mode, and either no capabilities and no
 * way to gain any (`hardened`, the default) or Docker's default set (`standard`).
 */
export function policyHostConfig({ policy, networkMode }: DockerPolicy): Docker.HostConfig {
  const hardened = policy.privileges !== 'standard';
  const mode = networkMode ?? (policy.network?.kind === 'none' ? 'none' : undefined);
  const { diskMiB } = policy.limits;
  return {
    ...resources(policy),
    ...(diskMiB !== undefined ? { StorageOpt: { size: `${diskMiB}M` } } : {}),
    ...(hardened ? { CapDrop: ['ALL'], SecurityOpt: ['no-new-privileges'] } : {}),
    ...(mode !== undefined ? { NetworkMode: mode } : {}),
  };
}

/**
 * Refuses a disk limit, before anything is created, on an engine whose storage driver cannot hold one
 * (only btrfs, zfs and overlay2 on xfs can; xfs also needs project quotas, which only the create
 * itself finds out: {@link diskLimitRefused}).
 * @throws WsError `CAPABILITY_UNSUPPORTED` naming the driver.
 */
export async function requireDiskLimits(docker: Docker, policy: ResolvedPolicy): Promise<void> {
  if (policy.limits.diskMiB === undefined) return;
  const info = (await docker.info()) as { Driver?: string; DriverStatus?: [string, string][] };
  const backing = info.DriverStatus?.find(([key]) => key === 'Backing Filesystem')?.[1];
  const driver = `${info.Driver ?? 'unknown'}${backing ? ` on ${backing}` : ''}`;
  if (info.Driver === 'btrfs' || info.Driver === 'zfs' || (info.Driver === 'overlay2' && backing === 'xfs'))
    return;
  throw policyUnsupported(
    'Docker',
    'limits.diskMiB',
    `the engine's storage driver (${driver}) cannot cap a container's disk; btrfs, zfs or overlay2 on xfs with project quotas can`,
  );
}

/** Whether the engine refused a disk limit because its storage driver cannot hold one. */
export function diskLimitRefused(error: unknown, policy: ResolvedPolicy): WsError | undefined {
  if (policy.limits.diskMiB === undefined) return undefined;
  const message = String(
    (error as { json?: { message?: string } })?.json?.message ?? (error as Error)?.message ?? '',
  );
  if (!/storage-?opt|storage driver|quota/i.test(message)) return undefined;
  return policyUnsupported(
    'Docker',
    'limits.diskMiB',
    `the engine's storage driver cannot cap a container's disk (${message.trim()}); overlay2 on xfs with pquota, btrfs or zfs can`,
  );
}

/**
 * Holds a container found by name to the policy asked: limits that differ are applied to the running
 * container (the engine updates them live); a network mode or privileges that differ cannot change
 * after creation.
 * @throws WsError `CONFLICT` naming what differs and how to open the workspace again.
 */
export async function matchContainerPolicy(
  container: Docker.Container,
  info: Docker.ContainerInspectInfo,
  asked: DockerPolicy,
): Promise<void> {
  const host = info.HostConfig;
  const wanted = policyHostConfig(asked);
  const hardened = (host.CapDrop ?? []).includes('ALL');
  const wantHardened = asked.policy.privileges !== 'standard';
  const mode = host.NetworkMode === 'default' || !host.NetworkMode ? 'bridge' : host.NetworkMode;
  const fixed: string[] = [];
  if (hardened !== wantHardened) fixed.push(`privileges ${hardened ? 'hardened' : 'standard'}`);
  const networkDiffers =
    asked.networkMode !== undefined
      ? mode !== asked.networkMode
      : asked.policy.network?.kind === 'none'
        ? mode !== 'none'
        : mode === 'none';
  if (networkDiffers) fixed.push(`network ${mode}`);
  if (asked.policy.limits.diskMiB !== undefined && host.StorageOpt?.size !== wanted.StorageOpt?.size)
    fixed.push('another disk limit');
  const limits = resources(asked.policy);
  for (const [key, name] of [
    ['Memory', 'memoryMiB'],
    ['NanoCpus', 'cpus'],
  ] as const)
    if (limits[key] === undefined && (host[key] ?? 0) > 0) fixed.push(`a ${name} limit`);
  if (fixed.length > 0)
    throw new WsError(
      'CONFLICT',
      `The container ${info.Name.replace(/^\//, '')} was created with ${fixed.join(', ')}, which this workspace's options do not ask for and a running container cannot change; open it with the same options, or close it first`,
      { details: { container: info.Name.replace(/^\//, ''), differs: fixed } },
    );
  const update: Record<string, number> = {};
  for (const key of ['PidsLimit', 'NanoCpus', 'Memory', 'MemorySwap'] as const) {
    const value = limits[key];
    if (value !== undefined && (host[key] ?? 0) !== value) update[key] = value;
  }
  if (Object.keys(update).length > 0) await container.update(update);
}
