// The sandbox policy options (`limits`, `network`, `privileges`) as a Pod and a NetworkPolicy spell them.
import type { V1NetworkPolicy, V1ObjectMeta, V1ResourceRequirements } from '@kubernetes/client-node';
import { type Privileges, WsError } from '@ws/core';
import {
  checkSandboxPolicy,
  checkWorkspaceUser,
  type PolicySupport,
  type ResolvedNetwork,
  refuseUnsupportedPolicy,
  WS_LABELS,
} from '@ws/core/backend';
import { MANAGED_BY, MANAGED_BY_LABEL, workspaceKey } from './names.js';

/** What the Kubernetes backend enforces. */
export const K8S_POLICY_SUPPORT: PolicySupport = {
  limits: ['cpus', 'memoryMiB', 'diskMiB'],
  network: ['none', 'full', 'allow-cidr'],
  privileges: ['hardened', 'standard'],
};

const K8S_POLICY_WHY = {
  'limits.pids':
    "a Pod has no process limit of its own in the API (the kubelet's podPidsLimit sets one for every Pod of a node)",
  'network.allow-host': 'a NetworkPolicy allows addresses and CIDR blocks only, not host names',
};

/** The container's resource name of each limit. */
const RESOURCE_OF = { cpus: 'cpu', memoryMiB: 'memory', diskMiB: 'ephemeral-storage' } as const;

/** The sandbox policy of a workspace's Pod, as the Pod and its NetworkPolicy take it. */
export interface PodPolicy {
  /** The container's resources: the native `resources` with the limits of `limits` added. */
  readonly resources: V1ResourceRequirements | undefined;
  /** Where the Pod may connect; undefined or `full`: no NetworkPolicy of the workspace's own. */
  readonly network: ResolvedNetwork | undefined;
  /** The container's privileges. */
  readonly privileges: Privileges;
  /** Who the container runs as (`user`); undefined: the image's user. */
  readonly user: PodUser | undefined;
}

/** A Pod's user: `runAsUser`, and `runAsGroup` when given. */
export interface PodUser {
  readonly uid: number;
  readonly gid?: number | undefined;
}

/**
 * Checks `limits`, `network`, `privileges` and `user` and maps them onto the Pod (no I/O).
 * @throws WsError `INVALID_ARGUMENT` for a malformed value, a user name (the API takes numeric ids
 *   only), or a limit given both in `limits` and in `resources.limits`; `CAPABILITY_UNSUPPORTED` for `limits.pids` and host names in an allow list.
 */
export function resolvePodPolicy(
  className: string,
  options: {
    limits?: unknown;
    network?: unknown;
    privileges?: unknown;
    user?: unknown;
    resources?: V1ResourceRequirements | undefined;
  },
): PodPolicy {
  const user = checkWorkspaceUser(className, options.user);
  if (user && 'name' in user)
    throw new WsError(
      'INVALID_ARGUMENT',
      `${className}: user ${JSON.stringify(user.text)} is a name, but Kubernetes needs a numeric id (securityContext.runAsUser): give "uid" or "uid:gid"`,
      { details: { option: 'user' } },
    );
  const policy = checkSandboxPolicy(className, options as Parameters<typeof checkSandboxPolicy>[1]);
  refuseUnsupportedPolicy('Kubernetes', policy, K8S_POLICY_SUPPORT, K8S_POLICY_WHY);
  const native = options.resources;
  const limits: Record<string, string> = {};
  const { cpus, memoryMiB, diskMiB } = policy.limits;
  // Millicores: the API's canonical form of a fraction (0.5 → 500m).
  if (cpus !== undefined) limits.cpu = `${Math.max(1, Math.round(cpus * 1000))}m`;
  if (memoryMiB !== undefined) limits.memory = `${memoryMiB}Mi`;
  if (diskMiB !== undefined) limits['ephemeral-storage'] = `${diskMiB}Mi`;
  for (const [limit, resource] of Object.entries(RESOURCE_OF))
    if (limits[resource] !== undefined && native?.limits?.[resource] !== undefined)
      throw new WsError(
        'INVALID_ARGUMENT',
        `${className}: limits.${limit} and resources.limits.${resource} set the same limit; give one of them`,
        { details: { option: `limits.${limit}` } },
      );
  // Only limits: the API defaults a request left out to its limit (a Guaranteed Pod when both are set).
  const resources =
    Object.keys(limits).length === 0 ? native : { ...native, limits: { ...native?.limits, ...limits } };
  return {
    resources,
    network: policy.network,
    privileges: policy.privileges ?? 'hardened',
    user: user && 'uid' in user ? { uid: user.uid, gid: user.gid } : undefined,
  };
}

/** Whether the container has a memory limit (its cgroup then counts what the limit killed). */
export function hasMemoryLimit(resources: V1ResourceRequirements | undefined): boolean {
  return resources?.limits?.memory !== undefined;
}

/**
 * The container's `securityContext`: hardened or not (the runtime's default capabilities), and the
 * user it runs as.
 */
export function securityContextOf(privileges: Privileges, user?: PodUser) {
  const context = {
    ...(privileges === 'hardened'
      ? { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } }
      : {}),
    ...(user ? { runAsUser: user.uid } : {}),
    ...(user?.gid !== undefined ? { runAsGroup: user.gid } : {}),
  };
  return Object.keys(context).length > 0 ? { securityContext: context } : {};
}

/**
 * The Pod's `securityContext` for a user: `fsGroup` (the gid, else the uid as a group id) makes the
 * kubelet give the workspace volume to that group, writable, so the user can write the workdir (a new
 * volume is root's otherwise).
 */
export function podSecurityContextOf(user: PodUser | undefined) {
  return user ? { securityContext: { fsGroup: user.gid ?? user.uid } } : {};
}

/** `10.0.0.1` → `10.0.0.1/32`: an ipBlock takes CIDR blocks only. */
function asCidr(entry: string): string {
  if (entry.includes('/')) return entry;
  return entry.includes(':') ? `${entry}/128` : `${entry}/32`;
}

/**
 * The NetworkPolicy holding a workspace's Pod to `network` (`none` or an allow list of CIDR blocks),
 * selecting the Pod by the workspace's labels. Ingress is denied as well: the host reaches the Pod
 * through the API server's exec, which no NetworkPolicy affects.
 */
export function networkPolicyManifest(
  metadata: V1ObjectMeta,
  workspaceId: string,
  network: ResolvedNetwork & { kind: 'none' | 'allow' },
): V1NetworkPolicy {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata,
    spec: {
      podSelector: {
        matchLabels: { [MANAGED_BY_LABEL]: MANAGED_BY, [WS_LABELS.key]: workspaceKey(workspaceId) },
      },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [],
      egress:
        network.kind === 'none'
          ? []
          : [{ to: network.cidrs.map((cidr) => ({ ipBlock: { cidr: asCidr(cidr) } })) }],
    },
  };
}
