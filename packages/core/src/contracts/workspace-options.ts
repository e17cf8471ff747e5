import { WsError } from './errors.js';
import type { WorkspaceEventListener } from './events.js';
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
   * `{workdir}` placeholders. Default: `DEFAULT_WORKSPACE_INSTRUCTIONS` (exported by `@ws/core`).
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
  /**
   * Packages installed in the sandbox when the workspace opens, before it is handed out: apt, then
   * pip, then npm (see {@link WorkspacePackages}). Installed once per sandbox: a re-attach to the same
   * sandbox installs only what it has not installed yet. Refused by the backends that run on the
   * host's own system (local, bwrap).
   */
  packages?: WorkspacePackages;
  /**
   * Receives the workspace's events as they happen: its opening (sandbox created or re-attached),
   * the gateway's starts and restarts (with its log tail when it fails), every command (program,
   * exit code, duration, output bytes), the bytes files move, tool calls, retries and warnings (see
   * `WorkspaceEvent`). `DEBUG=ws:*` prints the same events to stderr without a listener.
   */
  onEvent?: WorkspaceEventListener;
}

/**
 * What {@link CommonWorkspaceOptions.packages} installs at open, through the sandbox's `exec` as the
 * workspace's command user. A spec is one installer argument, passed as one argv element (never
 * through a shell): a spec starting with `-` (an installer flag) or holding a newline or NUL is
 * refused with `INVALID_ARGUMENT` at construction. Specs are compared as text: a re-attach skips the
 * specs already recorded as installed in that sandbox (a record in `/var/tmp`, written after the
 * install succeeded) and installs the new ones; nothing is ever uninstalled.
 *
 * A failed install fails the open with `PACKAGE_INSTALL_FAILED` (`TIMEOUT` past `timeoutMs`,
 * `ABORTED` on the open's signal), the installer's last output in the message, and closes what the
 * open started.
 */
export interface WorkspacePackages {
  /**
   * Debian packages: names (`jq`, `jq=1.6-2`) or absolute paths of `.deb` files in the sandbox, run
   * as `apt-get install -y --no-install-recommends -- …` with `DEBIAN_FRONTEND=noninteractive` (and
   * `apt-get update` then one more try when apt cannot locate a package). Needs root with its
   * capabilities in the sandbox (on Docker: `privileges: 'standard'`).
   */
  apt?: readonly string[];
  /**
   * Python packages (`name`, `name==1.2`, a local path or wheel in the sandbox), run as `python3 -m
   * pip install --no-input --disable-pip-version-check -- …`; the `PIP_*` variables of the
   * workspace's `env` apply.
   */
  pip?: readonly string[];
  /**
   * npm packages (`name`, `name@1.2`, a tarball or folder path in the sandbox), installed globally:
   * `npm install --global --no-audit --no-fund -- …`. Their commands land on the PATH (npm's global
   * bin); `require()` finds them with `NODE_PATH="$(npm root -g)"`. The command user must be able to
   * write npm's global prefix (root in the usual images; else set `NPM_CONFIG_PREFIX` in `env`).
   */
  npm?: readonly string[];
  /** Time limit of the whole install, all installers together, in milliseconds. Default: 600 000. */
  timeoutMs?: number;
}

const COMMON_KEYS = [
  'workspaceId',
  'instructions',
  'searchMode',
  'modelInputTypes',
  'defaultMcps',
  'maxLiveStatefulMcps',
  'skillPaths',
  'packages',
  'onEvent',
] as const satisfies readonly (keyof CommonWorkspaceOptions)[];

/** The common options out of a workspace class's options (only the ones that are set). */
export function engineOptions(options: CommonWorkspaceOptions): CommonWorkspaceOptions {
  const picked: Record<string, unknown> = {};
  for (const key of COMMON_KEYS) if (options[key] !== undefined) picked[key] = options[key];
  return picked as CommonWorkspaceOptions;
}

/**
 * A backend's own options: its workspace class's options without the common ones. A provider's
 * options are derived from it, so an option is declared (and documented) once, on the workspace class.
 */
export type OwnOptions<T extends CommonWorkspaceOptions> = Omit<T, keyof CommonWorkspaceOptions>;

/**
 * Every own option key of a workspace class, each once (`{ image: true, … }`): an option added to the
 * options interface and missing here, or listed here and missing there, fails to compile.
 */
export type OptionKeys<T extends CommonWorkspaceOptions> = { readonly [K in keyof OwnOptions<T>]-?: true };

/**
 * Names used by other libraries (AgentScope, the vendor SDKs) or by earlier versions for options
 * every backend spells one way: the host folder bound as the workdir, the injected vendor client, the
 * host folder for the backend's own state, the sandbox's time limit.
 */
const RENAMED: Readonly<Record<string, string>> = {
  workdir: 'hostWorkdir',
  work_dir: 'hostWorkdir',
  cwd: 'hostWorkdir',
  docker: 'client',
  sdk: 'client',
  connectionConfig: 'client',
  hostCacheDir: 'hostRuntimeDir',
  runtimeDir: 'hostRuntimeDir',
  id: 'workspaceId',
  workspace_id: 'workspaceId',
  timeout: 'timeoutMs',
  autoStopInterval: 'timeoutMs',
};

/** Edits (insert, delete, replace; letter case ignored) from `a` to `b`. */
function editDistance(a: string, b: string): number {
  const [from, to] = [a.toLowerCase(), b.toLowerCase()];
  let previous = Array.from({ length: to.length + 1 }, (_, index) => index);
  for (let i = 1; i <= from.length; i++) {
    const current = [i];
    for (let j = 1; j <= to.length; j++)
      current[j] = Math.min(
        (previous[j] ?? 0) + 1,
        (current[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + (from[i - 1] === to[j - 1] ? 0 : 1),
      );
    previous = current;
  }
  return previous[to.length] ?? 0;
}

/** The known key nearest to a misspelt one, when it is two edits away at most. */
function closest(key: string, known: ReadonlySet<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of known) {
    if (candidate === 'signal') continue;
    const found = editDistance(key, candidate);
    if (found < bestDistance) [best, bestDistance] = [candidate, found];
  }
  return best;
}

function unknownOption(
  className: string,
  key: string,
  known: ReadonlySet<string>,
  hint: string | undefined,
): WsError {
  const instead = RENAMED[key];
  const renamed = instead !== undefined && known.has(instead) ? instead : undefined;
  // A misspelling (two edits at most) is pointed at the option it most likely meant.
  const use = renamed ?? (hint === undefined ? closest(key, known) : undefined);
  const why = hint ?? (use ? `use ${JSON.stringify(use)}` : undefined);
  return new WsError(
    'INVALID_ARGUMENT',
    `${className} has no option ${JSON.stringify(key)}${why ? `; ${why}` : ''}`,
    {
      details: { option: key, ...(use ? { use } : {}) },
    },
  );
}

/**
 * Refuses option keys a workspace class does not know, so that a misspelt or foreign option (plain
 * JavaScript passes anything) is never silently ignored. `signal` is allowed (the static `open`
 * passes it on). `hints` says, for a key the class refuses on purpose, what to use instead.
 * @throws WsError `INVALID_ARGUMENT` naming the key and, where there is one, the name to use.
 */
export function checkOptionKeys<T extends CommonWorkspaceOptions>(
  className: string,
  options: T | undefined,
  ownKeys: NoInfer<OptionKeys<T>>,
  hints: Readonly<Record<string, string>> = {},
): void {
  if (options === undefined) return;
  if (typeof options !== 'object' || options === null)
    throw new WsError('INVALID_ARGUMENT', `${className} takes an options object`);
  const known = new Set<string>([...COMMON_KEYS, ...Object.keys(ownKeys), 'signal']);
  for (const key of Object.keys(options))
    if (!known.has(key)) throw unknownOption(className, key, known, hints[key]);
}

/**
 * Checks a workspace class's option keys (see {@link checkOptionKeys}) and splits the options: the
 * common ones for the engine, the backend's own (only those set) for its provider.
 * @throws WsError `INVALID_ARGUMENT` for an unknown key.
 */
export function splitOptions<T extends CommonWorkspaceOptions>(
  className: string,
  options: T | undefined,
  ownKeys: NoInfer<OptionKeys<T>>,
  hints?: Readonly<Record<string, string>>,
): {
  /** The common options that are set, for the engine. */
  common: CommonWorkspaceOptions;
  /** The backend's own options that are set, for its provider. */
  own: OwnOptions<T>;
} {
  checkOptionKeys<T>(className, options, ownKeys, hints);
  const own: Record<string, unknown> = {};
  for (const key of Object.keys(ownKeys)) {
    const value = (options as Record<string, unknown> | undefined)?.[key];
    if (value !== undefined) own[key] = value;
  }
  return { common: engineOptions(options ?? {}), own: own as OwnOptions<T> };
}

/**
 * Refuses the earlier names of a function's options (`renamed`: old name → what to use), for the
 * option bags that take foreign keys through (the reapers' options extend the vendor's connection).
 * @throws WsError `INVALID_ARGUMENT` naming the old key and the new one.
 */
export function refuseRenamedOptions(
  owner: string,
  options: object | undefined,
  renamed: Readonly<Record<string, string>>,
): void {
  if (typeof options !== 'object' || options === null) return;
  for (const [key, use] of Object.entries(renamed))
    if (key in options && (options as Record<string, unknown>)[key] !== undefined)
      throw new WsError(
        'INVALID_ARGUMENT',
        `${owner} has no option ${JSON.stringify(key)}; use ${JSON.stringify(use)}`,
        {
          details: { option: key, use },
        },
      );
}
