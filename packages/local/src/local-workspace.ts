import { resolve } from 'node:path';
import { type CommonWorkspaceOptions, engineOptions, WorkspaceEngine, WsError } from '@ws/core';
import { LocalProvider } from './local-provider.js';

/** Options of {@link LocalWorkspace}. */
export interface LocalWorkspaceOptions extends CommonWorkspaceOptions {
  /** The host directory the agent works in; created if missing. Relative paths resolve against the cwd. */
  workdir: string;
  /** Variables added to the host environment for every command (and stdio MCP server). */
  env?: Readonly<Record<string, string>>;
  /** Inherit the host process's environment in commands. Default: true. */
  inheritEnv?: boolean;
}

/**
 * A workspace on the host: commands run as host processes in the workdir, files are host files, MCP
 * servers run on the host. There is no isolation. Re-opening the same workdir re-attaches to
 * everything kept there.
 *
 * ```ts
 * await using workspace = await LocalWorkspace.open({ workdir: './agent-workspace' });
 * const result = await workspace.getSandbox().exec(['ls', '-la']);
 * ```
 */
export class LocalWorkspace extends WorkspaceEngine {
  /** @throws WsError `INVALID_ARGUMENT` for a missing workdir or an unsafe workspace id. */
  constructor(options: LocalWorkspaceOptions) {
    if (typeof options?.workdir !== 'string' || options.workdir.length === 0) {
      throw new WsError('INVALID_ARGUMENT', 'LocalWorkspace needs a workdir');
    }
    super({
      ...engineOptions(options),
      provider: new LocalProvider({
        workdir: resolve(options.workdir),
        ...(options.env ? { env: options.env } : {}),
        ...(options.inheritEnv !== undefined ? { inheritEnv: options.inheritEnv } : {}),
      }),
    });
  }

  /** Constructs and initializes a workspace in one step. */
  static async open(options: LocalWorkspaceOptions & { signal?: AbortSignal }): Promise<LocalWorkspace> {
    const workspace = new LocalWorkspace(options);
    await workspace.initialize(options.signal ? { signal: options.signal } : {});
    return workspace;
  }
}
