import { isIPv4 } from 'node:net';
import { type SandboxPolicyOptions, WsError } from '@ws/core';
import {
  checkSandboxPolicy,
  type PolicySupport,
  policyUnsupported,
  refuseUnsupportedPolicy,
} from '@ws/core/backend';
import type { DaytonaResources } from './daytona-provider.js';

/** What a Daytona sandbox can be held to of `limits`, `network` and `privileges`. */
export const DAYTONA_POLICY_SUPPORT: PolicySupport = {
  // CPUs, memory and disk are the sandbox's `resources`, given for a sandbox created from an image.
  limits: ['cpus', 'memoryMiB', 'diskMiB'],
  network: ['none', 'full', 'allow-cidr', 'allow-host'],
  privileges: [],
};

/** The most address blocks Daytona's `networkAllowList` takes. */
export const MAX_NETWORK_ALLOW_LIST = 5;

const SNAPSHOT_DECIDES =
  "what the sandbox's user may do is set by its snapshot or image (Daytona's default snapshot gives the daytona user sudo), and Daytona has no setting that gives or takes it";

const WHY: Readonly<Record<string, string>> = {
  'limits.pids': 'Daytona has no process limit per sandbox',
  'privileges.hardened': SNAPSHOT_DECIDES,
  'privileges.standard': SNAPSHOT_DECIDES,
};

/** The `daytona.create` fields that carry a sandbox policy. */
export interface DaytonaPolicyParams {
  /** CPUs, memory and disk (whole CPUs, GiB), with the workspace's own `resources` merged in. */
  resources?: DaytonaResources;
  networkBlockAll?: boolean;
  /** Comma-separated IPv4 CIDR blocks. */
  networkAllowList?: string;
  /** Comma-separated host names (`*.` wildcards allowed). */
  domainAllowList?: string;
}

/** A checked policy: the create fields, and whether a memory limit was asked for. */
export interface DaytonaPolicy {
  readonly params: DaytonaPolicyParams;
  /** True when the sandbox has a memory limit asked for (so a command past it is reported). */
  readonly memoryLimited: boolean;
}

const GIB = 1024;

/**
 * Checks a workspace's policy options and maps them to `daytona.create` fields (no I/O): limits
 * become `resources` (whole CPUs and GiB), no network is `networkBlockAll`, an allow list is
 * `networkAllowList` (IPv4 blocks) and `domainAllowList` (host names).
 * @throws WsError `INVALID_ARGUMENT` for a malformed option or a limit given in `resources` too;
 * `CAPABILITY_UNSUPPORTED` for one Daytona cannot enforce (`limits.pids`, any `privileges`, a limit
 * without `image` or not in whole CPUs or GiB, an IPv6 entry, more than
 * {@link MAX_NETWORK_ALLOW_LIST} address blocks).
 */
export function daytonaPolicy(
  options: SandboxPolicyOptions,
  resources: DaytonaResources | undefined,
  image: string | undefined,
): DaytonaPolicy {
  const policy = checkSandboxPolicy('DaytonaWorkspace', options);
  refuseUnsupportedPolicy('daytona', policy, DAYTONA_POLICY_SUPPORT, WHY);
  const { cpus, memoryMiB, diskMiB } = policy.limits;
  const asked: [keyof DaytonaResources, string, number | undefined, number][] = [
    ['cpu', 'limits.cpus', cpus, 1],
    ['memory', 'limits.memoryMiB', memoryMiB, GIB],
    ['disk', 'limits.diskMiB', diskMiB, GIB],
  ];
  const merged: DaytonaResources = { ...resources };
  for (const [field, option, value, per] of asked) {
    if (value === undefined) continue;
    if (!image)
      throw policyUnsupported(
        'daytona',
        option,
        'Daytona sets resources only for a sandbox created from an image (a snapshot has its own): give image',
      );
    if (resources?.[field] !== undefined)
      throw new WsError('INVALID_ARGUMENT', `Give ${option} or resources.${field}, not both`, {
        details: { option, resources: field },
      });
    // Rounding up would run the sandbox with more than was asked: a limit it was not held to.
    if (!Number.isInteger(value / per))
      throw policyUnsupported(
        'daytona',
        option,
        per === 1
          ? `Daytona allots whole CPUs (not ${value})`
          : `Daytona allots whole GiB (not ${value} MiB): ask for a multiple of ${per} MiB`,
      );
    merged[field] = value / per;
  }
  const params: DaytonaPolicyParams = Object.keys(merged).length > 0 ? { resources: merged } : {};
  const network = policy.network;
  if (network?.kind === 'none') params.networkBlockAll = true;
  if (network?.kind === 'allow') {
    const blocks = network.cidrs.map((entry) => {
      if (!isIPv4(entry.split('/')[0] ?? ''))
        throw policyUnsupported(
          'daytona',
          `the allow-list entry ${entry}`,
          'its allow list holds IPv4 address blocks only',
        );
      return entry.includes('/') ? entry : `${entry}/32`;
    });
    if (blocks.length > MAX_NETWORK_ALLOW_LIST)
      throw policyUnsupported(
        'daytona',
        `an allow list of ${blocks.length} address blocks`,
        `it takes at most ${MAX_NETWORK_ALLOW_LIST}`,
      );
    if (blocks.length > 0) params.networkAllowList = blocks.join(',');
    if (network.hosts.length > 0) params.domainAllowList = network.hosts.join(',');
  }
  return { params, memoryLimited: merged.memory !== undefined };
}
