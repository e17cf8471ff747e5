import { resolve } from 'node:path';
import { type McpServerSpec, type SearchMode, WorkspaceEngine, WsError } from '@ws/core';
import { LocalProvider } from './local-provider.js';

/** Options of {@link LocalWorkspace}. */
export interface LocalWorkspaceOptions {
  /** The host directory the agent works in; created if missing. Relative paths resolve against the cwd. */
  workdir: string;
  /** The workspace id (one safe path segment). Default: a random 32-hex-digit id. */
  workspaceId?: string;
  /** Variables added to the host environment for every command. */
  env?: Readonly<Record<string, string>>;
  /** Inherit the host process's environment in commands. Default: true. */
  inheritEnv?: boolean;
  /** The `<workspace>` prompt template (placeholders `{backend}`, `{workdir}`). */
  instructions?: string;
  /** How Grep and Glob search: `auto` (ripgrep when installed, else `find` + `grep`), `ripgrep` or `posix`. */
  searchMode?: SearchMode;
  /** Media types the model accepts; Read returns these as images or documents. */
  modelInputTypes?: readonly string[];
  /** MCP servers every (agent, session) scope starts with; they run on the host. */
  defaultMcps?: readonly McpServerSpec[];
  /** Most live stateful MCP connections across scopes. Default: max(40, 2 × stateful defaults). */
  maxLiveStatefulMcps?: number;
  /** Host folders holding a SKILL.md, copied into `skills/.seed` when the seed is empty. */
  skillPaths?: readonly string[];
}

/**
 * A workspace on the host: commands run as host processes in the workdir, files are host files.
 * There is no isolation. Re-opening the same workdir re-attaches to everything kept there.
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
    const workdir = resolve(options.workdir);
    super({
      provider: new LocalProvider({
        workdir,
        ...(options.env ? { env: options.env } : {}),
        ...(options.inheritEnv !== undefined ? { inheritEnv: options.inheritEnv } : {}),
      }),
      ...(options.workspaceId !== undefined ? { workspaceId: options.workspaceId } : {}),
      ...(options.instructions !== undefined ? { instructions: options.instructions } : {}),
      ...(options.searchMode !== undefined ? { searchMode: options.searchMode } : {}),
      ...(options.modelInputTypes !== undefined ? { modelInputTypes: options.modelInputTypes } : {}),
      ...(options.defaultMcps !== undefined ? { defaultMcps: options.defaultMcps } : {}),
      ...(options.maxLiveStatefulMcps !== undefined
        ? { maxLiveStatefulMcps: options.maxLiveStatefulMcps }
        : {}),
      ...(options.skillPaths !== undefined ? { skillPaths: options.skillPaths } : {}),
    });
  }

  /** Constructs and initializes a workspace in one step. */
  static async open(options: LocalWorkspaceOptions & { signal?: AbortSignal }): Promise<LocalWorkspace> {
    const workspace = new LocalWorkspace(options);
    await workspace.initialize(options.signal ? { signal: options.signal } : {});
    return workspace;
  }
}
