import { resolve } from 'node:path';
import { type CommonWorkspaceOptions, WsError } from '@ws/core';
import { checkOptionKeys, engineOptions, type OptionKeys, WorkspaceEngine } from '@ws/core/backend';
import { LocalProvider } from './local-provider.js';

/** Options of {@link LocalWorkspace}. */
export interface LocalWorkspaceOptions extends CommonWorkspaceOptions {
  /** The host directory the agent works in; created if missing. Relative paths resolve against the cwd. */
  hostWorkdir: string;
  /** Variables added to the host environment for every command (and stdio MCP server). */
  env?: Readonly<Record<string, string>>;
  /** Inherit the host process's environment in commands. Default: true. */
  inheritEnv?: boolean;
}

const LOCAL_KEYS: OptionKeys<LocalWorkspaceOptions> = { hostWorkdir: true, env: true, inheritEnv: true };

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
   * @throws WsError `INVALID_ARGUMENT` for a missing `hostWorkdir`, an unknown option or an unsafe workspace id.
   */
  constructor(options: LocalWorkspaceOptions) {
    checkOptionKeys('LocalWorkspace', options, LOCAL_KEYS);
    if (typeof options?.hostWorkdir !== 'string' || options.hostWorkdir.length === 0) {
      throw new WsError('INVALID_ARGUMENT', 'LocalWorkspace needs a hostWorkdir');
    }
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
