import { type CommonWorkspaceOptions, engineOptions, WorkspaceEngine } from '@ws/core';
import { BwrapProvider } from './bwrap-provider.js';

/** Options of {@link BubblewrapWorkspace}. */
export interface BubblewrapWorkspaceOptions extends CommonWorkspaceOptions {
  /**
   * Host directory bound at `/workspace` (created with mode 0700); the workspace is persistent and
   * re-attaches to it. Without one, a private temporary directory is used and removed on close.
   */
  hostWorkdir?: string;
  /** Where the gateway bundle is kept on the host. Default: `$XDG_CACHE_HOME/ws/bwrap`. Must not overlap the workdir. */
  hostCacheDir?: string;
  /** Variables for every command; the fixed base (HOME, PATH, TMPDIR, LANG, PWD) wins over them. */
  env?: Readonly<Record<string, string>>;
  /**
   * Share the host's network namespace (default: true). Sandboxed code can then reach anything the
   * host can, loopback services and cloud metadata endpoints included: this is not a network sandbox.
   * `false` gives the sandbox no network at all (MCP still works: the gateway listens on a unix socket).
   */
  shareNet?: boolean;
  /** Extra host paths bound read-only at the same place (a node installed outside /usr, say). */
  readOnlyPaths?: readonly string[];
  /** The bwrap executable. Default: `bwrap` on PATH. */
  bwrapPath?: string;
  /** Start the in-sandbox gateway when the sandbox has node 18 or newer. Default: true. */
  gateway?: boolean;
}

/**
 * A workspace in bubblewrap: every command runs in a fresh sandbox (namespaces unshared, the network
 * shared unless `shareNet: false`) that sees a read-only minimal system, the workdir at `/workspace`
 * and a private `/tmp`. File operations are confined to `/workspace` and `/tmp`; MCP servers run
 * inside the sandbox behind the gateway, reached through a unix socket.
 *
 * Security: with the network shared, sandboxed code can reach loopback services and cloud metadata
 * endpoints (169.254.169.254). The gateway's token protects only the gateway.
 */
export class BubblewrapWorkspace extends WorkspaceEngine {
  constructor(options: BubblewrapWorkspaceOptions = {}) {
    super({
      ...engineOptions(options),
      provider: new BwrapProvider({
        hostWorkdir: options.hostWorkdir,
        hostCacheDir: options.hostCacheDir,
        env: options.env,
        shareNet: options.shareNet,
        readOnlyPaths: options.readOnlyPaths,
        bwrapPath: options.bwrapPath,
        gateway: options.gateway,
      }),
    });
  }

  /** The host directory bound at `/workspace` (known once initialized). */
  get hostWorkdir(): string | undefined {
    return (this.provider as BwrapProvider).hostWorkdir;
  }

  /** Milliseconds the gateway took to install and start at the last initialize (undefined without one). */
  get gatewayStartMs(): number | undefined {
    return (this.provider as BwrapProvider).gatewayStartMs;
  }

  /** Constructs and initializes a workspace in one step. */
  static async open(
    options: BubblewrapWorkspaceOptions & { signal?: AbortSignal } = {},
  ): Promise<BubblewrapWorkspace> {
    const workspace = new BubblewrapWorkspace(options);
    await workspace.initialize(options.signal ? { signal: options.signal } : {});
    return workspace;
  }
}
