import type { SandboxPolicyOptions } from '@ws/core';
import { checkSandboxPolicy, type PolicySupport, refuseUnsupportedPolicy } from '@ws/core/backend';
import { ALL_TRAFFIC, type SandboxOpts } from 'e2b';

/** What an E2B sandbox can be held to of `limits`, `network` and `privileges`. */
export const E2B_POLICY_SUPPORT: PolicySupport = {
  // CPUs, memory and disk are the template's (set when it is built), the same for each of its sandboxes.
  limits: [],
  network: ['none', 'full', 'allow-cidr', 'allow-host'],
  // What commands may do is the template's.
  privileges: [],
};

const TEMPLATE_LIMIT =
  'an E2B sandbox has the CPUs, memory and disk of its template (set when the template is built, e.g. `e2b template build --cpu-count 2 --memory-mb 1024`); pick a template of the size you need';

const TEMPLATE_USER =
  "what commands may do is set by the sandbox's template (E2B's own give their user sudo inside the sandbox's VM), and E2B has no setting that gives or takes it";

const WHY: Readonly<Record<string, string>> = {
  'limits.cpus': TEMPLATE_LIMIT,
  'limits.memoryMiB': TEMPLATE_LIMIT,
  'limits.diskMiB': TEMPLATE_LIMIT,
  'limits.pids': 'E2B has no process limit per sandbox',
  'privileges.hardened': TEMPLATE_USER,
  'privileges.standard': TEMPLATE_USER,
};

/** The `Sandbox.create` options that carry a network policy. */
export type E2BNetworkOptions = Pick<SandboxOpts, 'allowInternetAccess' | 'network'>;

/**
 * Checks a workspace's policy options and maps them to `Sandbox.create` options (no I/O): no network
 * is `allowInternetAccess: false`; an allow list is `allowOut` with everything else denied.
 * @throws WsError `INVALID_ARGUMENT` for a malformed option, `CAPABILITY_UNSUPPORTED` for one E2B
 * cannot enforce (any limit, any `privileges`).
 */
export function e2bPolicy(options: SandboxPolicyOptions): E2BNetworkOptions {
  const policy = checkSandboxPolicy('E2BWorkspace', options);
  refuseUnsupportedPolicy('e2b', policy, E2B_POLICY_SUPPORT, WHY);
  const network = policy.network;
  if (network?.kind === 'none') return { allowInternetAccess: false };
  if (network?.kind === 'allow')
    // An allow entry wins over a deny entry: everything is denied but what the list allows.
    return { network: { allowOut: [...network.cidrs, ...network.hosts], denyOut: [ALL_TRAFFIC] } };
  return {};
}
