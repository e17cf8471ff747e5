import { WsError } from './errors.js';
import type { McpServerSpec } from './mcp.js';

/**
 * How Grep and Glob search: `auto` uses ripgrep when the sandbox has `rg` and `find` + `grep`
 * otherwise; `ripgrep` or `posix` force one.
 */
export type SearchMode = 'auto' | 'ripgrep' | 'posix';

/** The options every public workspace class takes besides its backend's own; the engine reads them. */
export interface CommonWorkspaceOptions {
  /** The workspace id; one path segment (see `validateId`). Default: a random 32-hex-digit id. */
  workspaceId?: string;
  /**
   * The `<workspace>` prompt template returned by `getInstructions()`, with `{backend}` and
   * `{workdir}` placeholders. Default: {@link DEFAULT_WORKSPACE_INSTRUCTIONS}.
   */
  instructions?: string;
  /**
   * How Grep and Glob search: `auto` (default) uses ripgrep when the sandbox has `rg` and `find` +
   * `grep` otherwise; `ripgrep` or `posix` force one.
   */
  searchMode?: SearchMode;
  /**
   * Media types the model accepts as input; Read returns files of these types as images or
   * documents (`image/*` wildcards allowed). Default: PNG, JPEG, GIF and WebP images.
   */
  modelInputTypes?: readonly string[];
  /** MCP servers every scope starts with (each scope gets its own copies). */
  defaultMcps?: readonly McpServerSpec[];
  /** Most live stateful MCP connections across scopes. Default: max(40, 2 × stateful defaults). */
  maxLiveStatefulMcps?: number;
  /** Host folders (each holding a SKILL.md) copied into `skills/.seed` when the seed is empty. */
  skillPaths?: readonly string[];
}

const COMMON_KEYS = [
  'workspaceId',
  'instructions',
  'searchMode',
  'modelInputTypes',
  'defaultMcps',
  'maxLiveStatefulMcps',
  'skillPaths',
] as const satisfies readonly (keyof CommonWorkspaceOptions)[];

/** The common options out of a workspace class's options (only the ones that are set). */
export function engineOptions(options: CommonWorkspaceOptions): CommonWorkspaceOptions {
  const picked: Record<string, unknown> = {};
  for (const key of COMMON_KEYS) if (options[key] !== undefined) picked[key] = options[key];
  return picked as CommonWorkspaceOptions;
}

/**
 * Names used by other libraries (AgentScope, the vendor SDKs) or by earlier versions for options
 * every backend spells one way: the host folder bound as the workdir, the injected vendor client, the
 * host folder for the backend's own state.
 */
const RENAMED: Readonly<Record<string, string>> = {
  workdir: 'hostWorkdir',
  work_dir: 'hostWorkdir',
  cwd: 'hostWorkdir',
  docker: 'client',
  sdk: 'client',
  hostCacheDir: 'hostRuntimeDir',
  runtimeDir: 'hostRuntimeDir',
  id: 'workspaceId',
  workspace_id: 'workspaceId',
  timeout: 'timeoutMs',
};

/**
 * Refuses option keys a workspace class does not know, so that a misspelt or foreign option (plain
 * JavaScript passes anything) is never silently ignored. `signal` is allowed (the static `open`
 * passes it on).
 * @throws WsError `INVALID_ARGUMENT` naming the key and, where there is one, the name to use.
 */
export function checkOptionKeys(
  className: string,
  options: object | undefined,
  backendKeys: readonly string[],
): void {
  if (options === undefined) return;
  if (typeof options !== 'object' || options === null)
    throw new WsError('INVALID_ARGUMENT', `${className} takes an options object`);
  const known = new Set<string>([...COMMON_KEYS, ...backendKeys, 'signal']);
  for (const key of Object.keys(options)) {
    if (known.has(key)) continue;
    const instead = RENAMED[key];
    throw new WsError(
      'INVALID_ARGUMENT',
      `${className} has no option ${JSON.stringify(key)}${instead && known.has(instead) ? `; use ${JSON.stringify(instead)}` : ''}`,
      { details: { option: key, ...(instead && known.has(instead) ? { use: instead } : {}) } },
    );
  }
}
