import { isIP } from 'node:net';
import { WsError } from '../contracts/errors.js';
import type {
  NetworkPolicy,
  Privileges,
  SandboxPolicyOptions,
  WorkspaceLimit,
  WorkspaceLimits,
} from '../contracts/sandbox-policy.js';

/** A network policy checked and sorted: addresses and CIDR blocks apart from host names. */
export type ResolvedNetwork =
  | {
      /** No network at all. */
      readonly kind: 'none';
    }
  | {
      /** The backend's ordinary network. */
      readonly kind: 'full';
    }
  | {
      /** Only the addresses and host names of an allow list. */
      readonly kind: 'allow';
      /** The allowed IP addresses and CIDR blocks. */
      readonly cidrs: readonly string[];
      /** The allowed host names, lower-cased (`*.` wildcards kept). */
      readonly hosts: readonly string[];
    };

/** The sandbox policy options of a workspace, checked (see {@link checkSandboxPolicy}). */
export interface ResolvedPolicy {
  /** The limits asked for (only those set). */
  readonly limits: WorkspaceLimits;
  /** The network asked for; undefined: the backend's default. */
  readonly network: ResolvedNetwork | undefined;
  /** The privileges asked for; undefined: the backend's default. */
  readonly privileges: Privileges | undefined;
}

/**
 * What a backend can enforce: the limits it maps, the network policies (`allow-cidr`: an allow list of
 * addresses and CIDR blocks, `allow-host`: one with host names) and the privilege settings.
 */
export interface PolicySupport {
  /** The limits the backend enforces. */
  readonly limits: readonly WorkspaceLimit[];
  /** The network policies the backend enforces. */
  readonly network: readonly ('none' | 'full' | 'allow-cidr' | 'allow-host')[];
  /** The privilege settings the backend gives. */
  readonly privileges: readonly Privileges[];
}

/** The option keys of {@link SandboxPolicyOptions}, for a backend's key table. */
export const POLICY_KEYS = {
  /** The `limits` option. */
  limits: true,
  /** The `network` option. */
  network: true,
  /** The `privileges` option. */
  privileges: true,
} as const;

const LIMIT_RULES: Readonly<Record<WorkspaceLimit, { min: number; integer: boolean; unit: string }>> = {
  cpus: { min: 0.01, integer: false, unit: 'CPUs' },
  memoryMiB: { min: 6, integer: true, unit: 'MiB' },
  pids: { min: 8, integer: true, unit: 'processes' },
  diskMiB: { min: 1, integer: true, unit: 'MiB' },
};

const HOST_NAME = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i;

function invalid(message: string, details: Record<string, unknown>): WsError {
  return new WsError('INVALID_ARGUMENT', message, { details });
}

function checkLimits(className: string, limits: unknown): WorkspaceLimits {
  if (limits === undefined) return {};
  if (typeof limits !== 'object' || limits === null || Array.isArray(limits))
    throw invalid(`${className}: limits takes an object such as { memoryMiB: 512, pids: 256 }`, {
      option: 'limits',
    });
  const checked: Record<string, number> = {};
  for (const [key, value] of Object.entries(limits)) {
    const rule = LIMIT_RULES[key as WorkspaceLimit];
    if (!rule)
      throw invalid(
        `${className}: limits has no ${JSON.stringify(key)}; the limits are ${Object.keys(LIMIT_RULES).join(', ')}`,
        { option: `limits.${key}` },
      );
    if (value === undefined) continue;
    if (
      typeof value !== 'number' ||
      !Number.isFinite(value) ||
      value < rule.min ||
      (rule.integer && !Number.isInteger(value))
    )
      throw invalid(
        `${className}: limits.${key} must be ${rule.integer ? 'a whole number' : 'a number'} of ${rule.unit}, at least ${rule.min} (got ${String(value)})`,
        { option: `limits.${key}`, value },
      );
    checked[key] = value;
  }
  return checked;
}

/** Whether `entry` is an IP address or a CIDR block (`10.0.0.0/8`, `fd00::/8`). */
function isCidr(entry: string): boolean {
  const [address = '', prefix, extra] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return false;
  if (prefix === undefined) return true;
  if (!/^\d{1,3}$/.test(prefix)) return false;
  return Number(prefix) <= (family === 4 ? 32 : 128);
}

function checkNetwork(className: string, network: unknown): ResolvedNetwork | undefined {
  if (network === undefined) return undefined;
  if (network === 'none' || network === 'full') return { kind: network };
  const allow =
    typeof network === 'object' && network !== null ? (network as { allow?: unknown }).allow : undefined;
  if (!Array.isArray(allow) || Object.keys(network as object).some((key) => key !== 'allow'))
    throw invalid(
      `${className}: network is 'none', 'full' or { allow: [hosts and CIDR blocks] } (got ${JSON.stringify(network)})`,
      { option: 'network' },
    );
  const cidrs: string[] = [];
  const hosts: string[] = [];
  for (const entry of allow) {
    if (typeof entry === 'string' && isCidr(entry)) cidrs.push(entry);
    else if (typeof entry === 'string' && entry.length <= 253 && HOST_NAME.test(entry))
      hosts.push(entry.toLowerCase());
    else
      throw invalid(
        `${className}: network.allow holds addresses, CIDR blocks and host names; ${JSON.stringify(entry)} is none of them`,
        { option: 'network.allow', value: entry },
      );
  }
  // Nothing allowed is no network.
  return cidrs.length + hosts.length === 0 ? { kind: 'none' } : { kind: 'allow', cidrs, hosts };
}

/**
 * Checks a workspace's `limits`, `network` and `privileges` (no I/O).
 * @throws WsError `INVALID_ARGUMENT` for an unknown limit, a limit that is not a positive number (a
 * whole one for memory, processes and disk), a network policy of another shape or an allow-list entry
 * that is not an address, CIDR block or host name, or privileges other than `hardened` or `standard`.
 */
export function checkSandboxPolicy(className: string, options: SandboxPolicyOptions): ResolvedPolicy {
  const { privileges } = options;
  if (privileges !== undefined && privileges !== 'hardened' && privileges !== 'standard')
    throw invalid(
      `${className}: privileges is 'hardened' or 'standard' (got ${JSON.stringify(privileges)})`,
      {
        option: 'privileges',
      },
    );
  return {
    limits: checkLimits(className, options.limits),
    network: checkNetwork(className, options.network as NetworkPolicy | undefined),
    privileges,
  };
}

/** A `CAPABILITY_UNSUPPORTED` error for a policy option the backend cannot enforce. */
export function policyUnsupported(backend: string, option: string, why: string): WsError {
  return new WsError('CAPABILITY_UNSUPPORTED', `The ${backend} backend cannot enforce ${option}: ${why}`, {
    details: { backend, option },
  });
}

/**
 * Refuses a policy the backend cannot enforce, before anything is created: the first limit, network
 * policy or privilege setting missing from `support`, with `why[option]` (or a general reason) in the
 * message.
 * @throws WsError `CAPABILITY_UNSUPPORTED` naming the backend and the option (`limits.cpus`, `network`).
 */
export function refuseUnsupportedPolicy(
  backend: string,
  policy: ResolvedPolicy,
  support: PolicySupport,
  why: Readonly<Record<string, string>> = {},
): void {
  for (const key of Object.keys(policy.limits) as WorkspaceLimit[])
    if (!support.limits.includes(key))
      throw policyUnsupported(backend, `limits.${key}`, why[`limits.${key}`] ?? 'it has no such limit');
  const network = policy.network;
  if (network) {
    const needs: PolicySupport['network'][number][] =
      network.kind === 'allow'
        ? [
            ...(network.cidrs.length > 0 ? ['allow-cidr' as const] : []),
            ...(network.hosts.length > 0 ? ['allow-host' as const] : []),
          ]
        : [network.kind];
    for (const need of needs)
      if (!support.network.includes(need)) {
        const asked =
          need === 'allow-host'
            ? 'an allow list of host names'
            : need === 'allow-cidr'
              ? 'an allow list'
              : `network: '${need}'`;
        throw policyUnsupported(backend, asked, why[`network.${need}`] ?? 'the sandbox cannot be held to it');
      }
  }
  if (policy.privileges !== undefined && !support.privileges.includes(policy.privileges))
    throw policyUnsupported(
      backend,
      `privileges: '${policy.privileges}'`,
      why[`privileges.${policy.privileges}`] ?? 'it has no such setting',
    );
}
