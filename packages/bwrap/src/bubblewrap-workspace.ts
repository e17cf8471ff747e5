import type { CommonWorkspaceOptions } from '@ws/core';
import { type OptionKeys, splitOptions, WorkspaceEngine } from '@ws/core/backend';
import { BwrapProvider } from './bwrap-provider.js';

/** Options of {@link BubblewrapWorkspace}. */
export interface BubblewrapWorkspaceOptions extends CommonWorkspaceOptions {
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

const BWRAP_KEYS: OptionKeys<BubblewrapWorkspaceOptions> = {
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
 * shared unless `shareNet: false`) that sees a read-only minimal system, the workdir at `/workspace`
 * and a private `/tmp`. File operations are confined to `/workspace` and `/tmp`; MCP servers run
 * inside the sandbox behind the gateway, reached through a unix socket.
 *
 * Security: with the network shared, sandboxed code can reach loopback services and cloud metadata
 * endpoints (169.254.169.254). The gateway's token protects only the gateway.
 */
export class BubblewrapWorkspace extends WorkspaceEngine<BwrapProvider> {
  /**
   * Checks the options and does no I/O: the workspace starts at `initialize()` (or `open()`).
   * @throws WsError `INVALID_ARGUMENT` for an unknown option or an unsafe workspace id.
   */
  constructor(options: BubblewrapWorkspaceOptions = {}) {
    const { common, own } = splitOptions('BubblewrapWorkspace', options, BWRAP_KEYS);
    super({ ...common, provider: new BwrapProvider(own) });
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
