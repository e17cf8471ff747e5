import { resolve } from 'node:path';
import { type CommonWorkspaceOptions, type SandboxPolicyOptions, WsError } from '@ws/core';
import {
  checkOptionKeys,
  engineOptions,
  noUserSwitchHint,
  type OptionKeys,
  POLICY_KEYS,
  WorkspaceEngine,
} from '@ws/core/backend';
import { checkLocalPolicy } from './local-policy.js';
import { LocalProvider } from './local-provider.js';

/** Options of {@link LocalWorkspace}. */
export interface LocalWorkspaceOptions extends CommonWorkspaceOptions, SandboxPolicyOptions {
  /** The host directory the agent works in; created if missing. Relative paths resolve against the cwd. */
  hostWorkdir: string;
  /** Variables added to the host environment for every command (and stdio MCP server). */
  env?: Readonly<Record<string, string>>;
  /** Inherit the host process's environment in commands. Default: true. */
  inheritEnv?: boolean;
  /** No limit can be enforced on host processes: any limit is refused with `CAPABILITY_UNSUPPORTED`. */
  limits?: SandboxPolicyOptions['limits'];
  /** `'full'` (default, and the only one): the host's network. Anything else is refused. */
  network?: SandboxPolicyOptions['network'];
  /**
   * `'standard'` (default, and the only one): the host user's own privileges. `'hardened'` is refused
   * (a host process cannot be hardened here; use @ws/bwrap).
   */
  privileges?: SandboxPolicyOptions['privileges'];
}

const LOCAL_KEYS: OptionKeys<LocalWorkspaceOptions> = {
  ...POLICY_KEYS,
  hostWorkdir: true,
  env: true,
  inheritEnv: true,
};

/**
 * A workspace on the host: commands run as host processes in the workdir, files are host files, MCP
 * servers run on the host. There is no isolation. Re-opening the same workdir re-attaches to
 * everything kept there.
 *
 * ```ts
 * const workspace = await LocalWorkspace.open({ hostWorkdir: './agent-workspace' });
 * const result = await workspace.getSandbox().exec(['ls', '-la']);
 * ```
 */
export class LocalWorkspace extends WorkspaceEngine<LocalProvider> {
  /**
   * Checks the options and does no I/O: the workspace starts at `initialize()` (or `open()`).
   * @throws WsError `INVALID_ARGUMENT` for a missing `hostWorkdir`, an unknown option (`user`: commands
   * run as the host process's user), an unsafe
   * workspace id or a malformed limit, network or privileges; `CAPABILITY_UNSUPPORTED` for any limit,
   * a network other than `'full'`, `privileges: 'hardened'` or `packages` (it would install into the
   * host's system).
   */
  constructor(options: LocalWorkspaceOptions) {
    checkOptionKeys('LocalWorkspace', options, LOCAL_KEYS, noUserSwitchHint("the host process's user"));
    if (typeof options?.hostWorkdir !== 'string' || options.hostWorkdir.length === 0) {
      throw new WsError('INVALID_ARGUMENT', 'LocalWorkspace needs a hostWorkdir');
    }
    checkLocalPolicy(options);
    if (options.packages !== undefined)
      throw new WsError(
        'CAPABILITY_UNSUPPORTED',
        "LocalWorkspace cannot install packages: commands run on the host, whose system is not the workspace's to change; install them on the host, or use @ws/docker",
        { details: { backend: 'local', option: 'packages' } },
      );
    super({
      ...engineOptions(options),
      provider: new LocalProvider({
        workdir: resolve(options.hostWorkdir),
        ...(options.env ? { env: options.env } : {}),
        ...(options.inheritEnv !== undefined ? { inheritEnv: options.inheritEnv } : {}),
      }),
    });
  }
}
