import { type Privileges, type SandboxPolicyOptions, WsError } from '@ws/core';
import {
  checkSandboxPolicy,
  type PolicySupport,
  type ResolvedPolicy,
  refuseUnsupportedPolicy,
  type WorkspaceLimit,
} from '@ws/core/backend';

/** The backend's name in refusals. */
const BACKEND = 'bubblewrap';

const NO_ALLOW_LIST =
  "bubblewrap shares the host's network or gives the sandbox none; it cannot filter by destination (use network: 'none', or a firewall on the host)";

const WHY: Readonly<Record<string, string>> = {
  'limits.diskMiB':
    'the workdir and /tmp are host folders and bubblewrap has no disk quota (put them on a filesystem with quotas, or use @ws/docker)',
  'network.allow-cidr': NO_ALLOW_LIST,
  'network.allow-host': NO_ALLOW_LIST,
  'privileges.standard':
    "the host process is not root, and a user-namespace sandbox started by another user gives root's capabilities over nothing (run the host process as root, or use @ws/docker)",
};

/**
 * Docker's default capability set: what `privileges: 'standard'` leaves a command. CAP_SYS_ADMIN is
 * not among them on purpose: with it, root in the sandbox could remount the read-only system
 * writable, as the host's root.
 */
const STANDARD_CAPABILITIES = [
  'CAP_AUDIT_WRITE',
  'CAP_CHOWN',
  'CAP_DAC_OVERRIDE',
  'CAP_FOWNER',
  'CAP_FSETID',
  'CAP_KILL',
  'CAP_MKNOD',
  'CAP_NET_BIND_SERVICE',
  'CAP_NET_RAW',
  'CAP_SETFCAP',
  'CAP_SETGID',
  'CAP_SETPCAP',
  'CAP_SETUID',
  'CAP_SYS_CHROOT',
];

/** A bubblewrap workspace's sandbox policy, checked. */
export interface BwrapPolicy {
  /** The common options as checked (limits only those given). */
  readonly policy: ResolvedPolicy;
  /** Whether the sandbox shares the host's network (`network: 'full'`, the default). */
  readonly shareNet: boolean;
  /** What commands may do; `hardened` unless `standard` was asked. */
  readonly privileges: Privileges;
}

/** What bubblewrap can enforce on any host; the limits need cgroups, looked for at open. */
function staticSupport(): PolicySupport {
  return {
    limits: ['cpus', 'memoryMiB', 'pids'],
    network: ['none', 'full'],
    privileges: process.getuid?.() === 0 ? ['hardened', 'standard'] : ['hardened'],
  };
}

/**
 * Checks a bubblewrap workspace's `limits`, `network`, `privileges` and `shareNet` (no I/O).
 * @throws WsError `INVALID_ARGUMENT` for a malformed value, or `shareNet` and `network` that disagree;
 * `CAPABILITY_UNSUPPORTED` for a disk limit, an allow list, or `standard` privileges when not root.
 */
export function bwrapPolicy(options: SandboxPolicyOptions & { shareNet?: unknown }): BwrapPolicy {
  const policy = checkSandboxPolicy('BubblewrapWorkspace', options);
  const { shareNet } = options;
  if (shareNet !== undefined && typeof shareNet !== 'boolean')
    throw new WsError(
      'INVALID_ARGUMENT',
      `BubblewrapWorkspace: shareNet is true or false (got ${JSON.stringify(shareNet)})`,
      {
        details: { option: 'shareNet' },
      },
    );
  const network = policy.network?.kind;
  if (
    shareNet !== undefined &&
    network !== undefined &&
    network !== 'allow' &&
    shareNet !== (network === 'full')
  )
    throw new WsError(
      'INVALID_ARGUMENT',
      `BubblewrapWorkspace: shareNet: ${shareNet} and network: '${network}' disagree; give network only (shareNet is its older spelling)`,
      { details: { option: 'network' } },
    );
  refuseUnsupportedPolicy(BACKEND, policy, staticSupport(), WHY);
  return {
    policy,
    shareNet: network === undefined ? (shareNet ?? true) : network === 'full',
    privileges: policy.privileges ?? 'hardened',
  };
}

/**
 * Refuses, at open, the limits this host's cgroups cannot enforce (`available`: the limits they can,
 * `why`: why the others cannot).
 * @throws WsError `CAPABILITY_UNSUPPORTED` naming the first limit asked that is not available.
 */
export function refuseUnavailableLimits(
  policy: ResolvedPolicy,
  available: readonly WorkspaceLimit[],
  why: string,
): void {
  const reasons: Record<string, string> = {};
  for (const limit of ['cpus', 'memoryMiB', 'pids'] as const) reasons[`limits.${limit}`] = why;
  refuseUnsupportedPolicy(
    BACKEND,
    { limits: policy.limits, network: undefined, privileges: undefined },
    { limits: available, network: [], privileges: [] },
    reasons,
  );
}

/**
 * The capability arguments of every bwrap: none left inside (`hardened`: bwrap keeps a root caller's
 * by default, and with them a command could remount the read-only system writable), or Docker's
 * default set (`standard`). bwrap always sets no-new-privileges, so setuid programs gain nothing.
 */
export function capabilityArguments(privileges: Privileges = 'hardened'): string[] {
  const args = ['--cap-drop', 'ALL'];
  if (privileges === 'standard') for (const name of STANDARD_CAPABILITIES) args.push('--cap-add', name);
  return args;
}
