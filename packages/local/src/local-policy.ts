import type { SandboxPolicyOptions } from '@ws/core';
import { checkSandboxPolicy, type PolicySupport, refuseUnsupportedPolicy } from '@ws/core/backend';

const HOST_ONLY = 'commands are host processes; for a sandbox use @ws/bwrap or @ws/docker';

/**
 * What a host process can be held to: nothing but the host's own network and its user's own
 * privileges. rlimits are no honest limit: RLIMIT_AS fails allocations instead of killing (so no
 * command could report `outOfMemory`), and RLIMIT_NPROC counts every process of the host user (and
 * binds no root), not the workspace's.
 */
const LOCAL_POLICY_SUPPORT: PolicySupport = { limits: [], network: ['full'], privileges: ['standard'] };

const WHY: Readonly<Record<string, string>> = {
  'limits.cpus': `the host has no per-workspace CPU limit here; ${HOST_ONLY}`,
  'limits.memoryMiB': `an address-space rlimit makes allocations fail instead of killing the command, and no out-of-memory could be reported; ${HOST_ONLY}`,
  'limits.pids': `the process rlimit counts every process of the host user (and does not bind root), not the workspace's; ${HOST_ONLY}`,
  'limits.diskMiB': `the workdir is a host folder; ${HOST_ONLY}`,
  'network.none': `a host process has the host's network; ${HOST_ONLY}`,
  'network.allow-cidr': `a host process has the host's network; ${HOST_ONLY}`,
  'network.allow-host': `a host process has the host's network; ${HOST_ONLY}`,
  'privileges.hardened': `commands run with the host user's own privileges; for commands without capabilities use @ws/bwrap`,
};

/**
 * Checks a local workspace's `limits`, `network` and `privileges` (no I/O): only `network: 'full'` and
 * `privileges: 'standard'`, what it has anyway, are accepted.
 * @throws WsError `INVALID_ARGUMENT` for a malformed value; `CAPABILITY_UNSUPPORTED` for any limit,
 * `network: 'none'` or an allow list, and `privileges: 'hardened'`.
 */
export function checkLocalPolicy(options: SandboxPolicyOptions): void {
  refuseUnsupportedPolicy('local', checkSandboxPolicy('LocalWorkspace', options), LOCAL_POLICY_SUPPORT, WHY);
}
