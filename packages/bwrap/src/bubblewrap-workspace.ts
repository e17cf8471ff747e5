import { type CommonWorkspaceOptions, type SandboxPolicyOptions, WsError } from '@ws/core';
import {
  noUserSwitchHint,
  type OptionKeys,
  POLICY_KEYS,
  splitOptions,
  WorkspaceEngine,
} from '@ws/core/backend';
import { bwrapPolicy } from './bwrap-policy.js';
import { BwrapProvider } from './bwrap-provider.js';

/** Options of {@link BubblewrapWorkspace}. */
export interface BubblewrapWorkspaceOptions extends CommonWorkspaceOptions, SandboxPolicyOptions {
  /**
   * Host directory bound at `/workspace` (created with mode 0700); the workspace is persistent and
   * re-attaches to it. Without one, a private temporary directory is used and removed on close.
   */
  hostWorkdir?: string;
  /**
   * Host folder for the backend's own state (the gateway bundle, sockets); the sandbox never sees it
   * but for the socket folder of its gateway. Default: `$XDG_RUNTIME_DIR/ws-bwrap-<uid>` (or the temp
   * folder's). Must not overlap the workdir.
   */
  hostRuntimeDir?: string;
  /** Variables for every command; the fixed base (HOME, PATH, TMPDIR, LANG, PWD) wins over them. */
  env?: Readonly<Record<string, string>>;
  /**
   * What every bwrap of the workspace (each command, the gateway) may use, through a cgroup of the
   * workspace's own: `pids` (default `DEFAULT_PIDS_LIMIT`, 2048), `memoryMiB` (no swap past it; a
   * process past it is killed and the command reports `outOfMemory`), `cpus`. Needs cgroups the host
   * process may create (root, or a delegated `<hierarchy>/ws`); without them a limit asked for is
   * refused with `CAPABILITY_UNSUPPORTED`, and a workspace asking none opens with no process limit
   * and a warning. `diskMiB` is refused.
   */
  limits?: SandboxPolicyOptions['limits'];
  /**
   * `'full'` (default): the host's network namespace is shared. Sandboxed code can then reach anything
   * the host can, loopback services and cloud metadata endpoints included: this is not a network
   * sandbox. `'none'`: no network at all but loopback (MCP still works: the gateway listens on a unix
   * socket). An allow list is refused with `CAPABILITY_UNSUPPORTED`.
   */
  network?: SandboxPolicyOptions['network'];
  /**
   * `'hardened'` (default): commands have no capabilities, and bwrap's no-new-privileges keeps setuid
   * programs from giving any. `'standard'`: commands keep Docker's default capability set (no
   * CAP_SYS_ADMIN), so root in the sandbox can change owners and the like in `/workspace` and `/tmp`;
   * the system stays read-only. Only when the host process is root (else `CAPABILITY_UNSUPPORTED`).
   */
  privileges?: SandboxPolicyOptions['privileges'];
  /** The older spelling of `network`: true is `'full'`, false `'none'`. Giving both, they must agree. */
  shareNet?: boolean;
  /** Extra host paths bound read-only at the same place (a node installed outside /usr, say). */
  readOnlyPaths?: readonly string[];
  /** The bwrap executable. Default: `bwrap` on PATH. */
  bwrapPath?: string;
  /** Start the in-sandbox gateway when the sandbox has node 18 or newer. Default: true. */
  gateway?: boolean;
}

const BWRAP_KEYS: OptionKeys<BubblewrapWorkspaceOptions> = {
  ...POLICY_KEYS,
  hostWorkdir: true,
  hostRuntimeDir: true,
  env: true,
  shareNet: true,
  readOnlyPaths: true,
  bwrapPath: true,
  gateway: true,
};

/**
 * A workspace in bubblewrap: every command runs in a fresh sandbox (namespaces unshared, the network
 * shared unless `network: 'none'`, no capabilities, in the workspace's cgroup where the host has
 * cgroups) that sees a read-only minimal system, the workdir at `/workspace` and a private `/tmp`. File operations are confined to `/workspace` and `/tmp`; MCP servers run
 * inside the sandbox behind the gateway, reached through a unix socket.
 *
 * Security: with the network shared, sandboxed code can reach loopback services and cloud metadata
 * endpoints (169.254.169.254). The gateway's token protects only the gateway.
 */
export class BubblewrapWorkspace extends WorkspaceEngine<BwrapProvider> {
  /**
   * Checks the options and does no I/O: the workspace starts at `initialize()` (or `open()`).
   * @throws WsError `INVALID_ARGUMENT` for an unknown option (`user`: commands run as the host
   * process's user), an unsafe workspace id, a malformed
   * limit, network or privileges, or `shareNet` and `network` that disagree; `CAPABILITY_UNSUPPORTED`
   * for a disk limit, a network allow list, `standard` privileges when the host process is not root,
   * or `packages` (the sandbox's system is the host's, read-only) (limits the host's cgroups cannot
   * enforce are refused at `initialize()`, before anything is made).
   */
  constructor(options: BubblewrapWorkspaceOptions = {}) {
    const { common, own } = splitOptions(
      'BubblewrapWorkspace',
      options,
      BWRAP_KEYS,
      noUserSwitchHint("the host process's user, mapped into the sandbox's user namespace"),
    );
    if (common.packages !== undefined)
      throw new WsError(
        'CAPABILITY_UNSUPPORTED',
        "BubblewrapWorkspace cannot install packages: the sandbox's system is the host's, bound read-only; install them on the host, or use @ws/docker",
        { details: { backend: 'bwrap', option: 'packages' } },
      );
    const policy = bwrapPolicy(own);
    super({ ...common, provider: new BwrapProvider(own, policy) });
  }

  /** The host directory bound at `/workspace` (known once initialized). */
  get hostWorkdir(): string | undefined {
    return this.provider.hostWorkdir;
  }

  /** Milliseconds the gateway took to start, once it answered (it starts in the background at initialize). */
  get gatewayStartMs(): number | undefined {
    return this.provider.gatewayStartMs;
  }

  /**
   * Waits for the in-sandbox gateway (MCP, fast file calls), which starts in the background at
   * `initialize()`: resolves with its start time in milliseconds, or undefined when this workspace
   * runs none. @throws WsError `BACKEND_UNAVAILABLE` when it cannot start.
   */
  gatewayReady(options: { signal?: AbortSignal } = {}): Promise<number | undefined> {
    return this.provider.gatewayReady(options);
  }
}
