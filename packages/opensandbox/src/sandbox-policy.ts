// The sandbox policy options (`limits`, `network`, `privileges`) as OpenSandbox's create request spells them.
import { DEFAULT_RESOURCE_LIMITS, type NetworkPolicy } from '@alibaba-group/opensandbox';
import { WsError } from '@ws/core';
import { checkSandboxPolicy, type PolicySupport, refuseUnsupportedPolicy } from '@ws/core/backend';

/** What the OpenSandbox backend enforces. */
export const OPENSANDBOX_POLICY_SUPPORT: PolicySupport = {
  limits: ['cpus', 'memoryMiB'],
  network: ['none', 'full', 'allow-cidr', 'allow-host'],
  privileges: [],
};

const OPENSANDBOX_POLICY_WHY = {
  'limits.pids': "the process limit is the server's setting (docker.pids_limit), not a sandbox's",
  'limits.diskMiB': "a sandbox's resource limits are CPU, memory and GPUs only",
  'privileges.hardened':
    "a sandbox's capabilities are the server's setting (docker.drop_capabilities), not a sandbox's; by default it drops some, not all",
  'privileges.standard':
    "a sandbox's capabilities are the server's setting (docker.drop_capabilities), not a sandbox's",
};

/** The create request's parts the sandbox policy sets. */
export interface SandboxPolicyRequest {
  /** `resource` of the create request: the native `resources` (else the SDK's default) with `limits` added. */
  readonly resource: Record<string, string> | undefined;
  /** `networkPolicy` of the create request; undefined: none (the server's allow-all). */
  readonly networkPolicy: NetworkPolicy | undefined;
}

/**
 * Checks `limits`, `network` and `privileges` and maps them onto the create request (no I/O).
 * @throws WsError `INVALID_ARGUMENT` for a malformed value, or a limit given both in `limits` and in
 *   `resources`; `CAPABILITY_UNSUPPORTED` for `limits.pids`, `limits.diskMiB` and any `privileges`.
 */
export function resolveSandboxPolicy(
  className: string,
  options: {
    limits?: unknown;
    network?: unknown;
    privileges?: unknown;
    resources?: Readonly<Record<string, string>> | undefined;
  },
): SandboxPolicyRequest {
  const policy = checkSandboxPolicy(className, options as Parameters<typeof checkSandboxPolicy>[1]);
  refuseUnsupportedPolicy('OpenSandbox', policy, OPENSANDBOX_POLICY_SUPPORT, OPENSANDBOX_POLICY_WHY);
  const limits: Record<string, string> = {};
  const { cpus, memoryMiB } = policy.limits;
  if (cpus !== undefined) limits.cpu = `${Math.max(1, Math.round(cpus * 1000))}m`;
  if (memoryMiB !== undefined) limits.memory = `${memoryMiB}Mi`;
  const native = options.resources;
  for (const [limit, resource] of [
    ['cpus', 'cpu'],
    ['memoryMiB', 'memory'],
  ] as const)
    if (limits[resource] !== undefined && native?.[resource] !== undefined)
      throw new WsError(
        'INVALID_ARGUMENT',
        `${className}: limits.${limit} and resources.${resource} set the same limit; give one of them`,
        { details: { option: `limits.${limit}` } },
      );
  // The SDK sends its default resources when none are given: a limit given alone keeps the others.
  const resource =
    Object.keys(limits).length === 0
      ? native && { ...native }
      : { ...(native ?? DEFAULT_RESOURCE_LIMITS), ...limits };
  const network = policy.network;
  const networkPolicy: NetworkPolicy | undefined =
    network === undefined || network.kind === 'full'
      ? undefined
      : {
          defaultAction: 'deny',
          egress:
            network.kind === 'none'
              ? []
              : [...network.cidrs, ...network.hosts].map((target) => ({ action: 'allow' as const, target })),
        };
  return { resource, networkPolicy };
}

/**
 * Whether the workspace asked for a memory limit (`limits.memoryMiB` or `resources.memory`): then its
 * kills are reported as out of memory, at the cost of one command at open. The SDK's default limit
 * alone does not pay it.
 */
export function hasMemoryLimit(resource: Readonly<Record<string, string>> | undefined): boolean {
  return resource?.memory !== undefined;
}
