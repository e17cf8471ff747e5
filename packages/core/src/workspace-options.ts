import type { McpServerSpec } from './mcp.js';
import type { SearchMode } from './tools/search-tools.js';

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
