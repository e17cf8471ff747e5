import { abortError, fromErrno, isWsError, throwIfAborted, WsError } from './errors.js';
import { generateId, validateId } from './ids.js';
import { DEFAULT_WORKSPACE_INSTRUCTIONS, formatInstructions } from './instructions.js';
import { type LayoutPaths, layoutPaths } from './layout.js';
import { completeSandbox } from './posix-fallbacks.js';
import type { Provider } from './provider.js';
import type { CompleteSandbox } from './sandbox.js';
import type { Tool } from './tool.js';
import { createBuiltinTools } from './tools/builtin-tools.js';
import { ReadCache } from './tools/read-cache.js';
import { DEFAULT_MODEL_INPUT_TYPES } from './tools/read-tool.js';
import { type SearchMode, SearchTools } from './tools/search-tools.js';
import type { CallOptions, WorkspaceCapabilities, WorkspaceLifecycle, WorkspaceState } from './workspace.js';

/** Options of {@link WorkspaceEngine}; public workspace classes pass theirs through. */
export interface WorkspaceEngineOptions {
  /** The backend's provider. */
  provider: Provider;
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
}

/**
 * The one implementation of the workspace protocol, shared by every backend. A backend supplies a
 * {@link Provider}; its public class (`LocalWorkspace`, …) extends this engine.
 *
 * Constructing an engine does no I/O. `initialize()` opens the sandbox and lays out the workdir.
 */
export class WorkspaceEngine implements WorkspaceLifecycle {
  /** The workspace id. */
  readonly id: string;
  protected readonly provider: Provider;
  private readonly instructionsTemplate: string;
  private currentState: WorkspaceState = 'created';
  private sandbox: CompleteSandbox | undefined;
  private openedWorkdir: string | undefined;
  private initializing: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  private destroying: Promise<void> | undefined;
  private readonly search: SearchTools;
  private readonly modelInputTypes: readonly string[];
  private readonly readCaches = new Map<string, ReadCache>();

  /** @throws WsError `INVALID_ARGUMENT` for a workspace id that is not one safe path segment. */
  constructor(options: WorkspaceEngineOptions) {
    this.provider = options.provider;
    this.id =
      options.workspaceId === undefined ? generateId() : validateId(options.workspaceId, 'workspaceId');
    this.instructionsTemplate = options.instructions ?? DEFAULT_WORKSPACE_INSTRUCTIONS;
    this.search = new SearchTools(options.searchMode ?? 'auto');
    this.modelInputTypes = [...(options.modelInputTypes ?? DEFAULT_MODEL_INPUT_TYPES)];
  }

  /** Where the workspace is in its life. */
  get state(): WorkspaceState {
    return this.currentState;
  }

  /**
   * The workdir, as a path inside the sandbox.
   * @throws WsError `NOT_READY` when the backend only learns it at `initialize()` and that has not run.
   */
  get workdir(): string {
    const workdir = this.openedWorkdir ?? this.provider.expectedWorkdir;
    if (workdir === undefined)
      throw new WsError(
        'NOT_READY',
        `The ${this.provider.backend} workspace learns its workdir at initialize()`,
      );
    return workdir;
  }

  /** What this workspace can do. `sandbox` lists the natives until `initialize()`, then all operations. */
  get capabilities(): WorkspaceCapabilities {
    return {
      backend: this.provider.backend,
      persistent: this.provider.persistent,
      isolation: this.provider.isolation,
      sandbox: this.sandbox?.capabilities ?? {
        stat: true,
        list: true,
        remove: true,
        mkdir: true,
        rename: true,
        readStream: true,
        writeStream: true,
        spawn: false,
      },
    };
  }

  /** The absolute paths of the workdir's layout entries. */
  protected get paths(): LayoutPaths {
    return layoutPaths(this.workdir);
  }

  async initialize(options: CallOptions = {}): Promise<void> {
    this.assertNotClosed();
    throwIfAborted(options.signal);
    if (this.currentState === 'ready') return;
    this.initializing ??= this.runInitialize(options).finally(() => {
      this.initializing = undefined;
    });
    await raceSignal(this.initializing, options.signal);
  }

  private async runInitialize(options: CallOptions): Promise<void> {
    this.currentState = 'initializing';
    try {
      const session = await this.provider.open(options);
      this.sandbox = completeSandbox(session.sandbox);
      this.openedWorkdir = session.workdir;
      throwIfAborted(options.signal);
      await this.layOut(options);
      await this.onInitialize(options);
      throwIfAborted(options.signal);
      this.currentState = 'ready';
    } catch (error) {
      this.sandbox = undefined;
      this.openedWorkdir = undefined;
      await this.provider.close({}).catch(() => {});
      this.currentState = 'created';
      throw isWsError(error)
        ? error
        : fromErrno(error, `Initializing the ${this.provider.backend} workspace failed`);
    }
  }

  /**
   * Runs after the sandbox is open and the layout exists, inside `initialize()`. Subsystems (MCP
   * restore, skill seeding) hook in here; the base does nothing.
   */
  protected async onInitialize(_options: CallOptions): Promise<void> {}

  /** Runs at the start of `close()` while the sandbox is still open; the base does nothing. */
  protected async onClose(_options: CallOptions): Promise<void> {}

  /** Runs inside `reset()` before the layout is deleted; the base does nothing. */
  protected async onReset(_options: CallOptions): Promise<void> {}

  async close(options: CallOptions = {}): Promise<void> {
    if (this.currentState === 'closed') return;
    this.closing ??= this.runClose(options);
    await this.closing;
  }

  private async runClose(options: CallOptions): Promise<void> {
    if (this.initializing) await this.initializing.catch(() => {});
    const wasOpen = this.currentState === 'ready';
    this.currentState = 'closing';
    try {
      if (wasOpen) await this.onClose(options).catch(() => {});
      if (wasOpen) await this.provider.close(options);
    } finally {
      this.sandbox = undefined;
      this.currentState = 'closed';
    }
  }

  async reset(options: CallOptions = {}): Promise<void> {
    const sandbox = this.requireSandbox();
    throwIfAborted(options.signal);
    await this.onReset(options);
    const { mcpFile, skillsDir, sessionsDir, dataDir } = this.paths;
    await removeAll(sandbox, [mcpFile, skillsDir, sessionsDir, dataDir], options);
    await this.layOut(options);
  }

  async destroy(options: CallOptions = {}): Promise<void> {
    this.destroying ??= (async () => {
      await this.close(options);
      await this.provider.destroy(options);
    })();
    await this.destroying;
  }

  /**
   * The built-in tools, bound to this workspace. Each call returns fresh tool objects; tools of the
   * same `agentId` (default: a shared one) share one read-before-edit memory.
   * @throws WsError `NOT_READY` before initialize, `DISPOSED` after close.
   */
  async listTools(options: { agentId?: string } & CallOptions = {}): Promise<Tool[]> {
    this.requireSandbox();
    throwIfAborted(options.signal);
    const agentKey = options.agentId === undefined ? '' : validateId(options.agentId, 'agentId');
    let readCache = this.readCaches.get(agentKey);
    if (!readCache) {
      readCache = new ReadCache();
      this.readCaches.set(agentKey, readCache);
    }
    return createBuiltinTools({
      sandbox: () => this.requireSandbox(),
      workdir: this.workdir,
      readCache,
      search: this.search,
      modelInputTypes: this.modelInputTypes,
    });
  }

  getInstructions(): string {
    const workdir = this.openedWorkdir ?? this.provider.expectedWorkdir ?? '<assigned at initialize>';
    return formatInstructions(this.instructionsTemplate, { backend: this.provider.description, workdir });
  }

  getSandbox(): CompleteSandbox {
    return this.requireSandbox();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /**
   * The live sandbox.
   * @throws WsError `DISPOSED` after close, `NOT_READY` before initialize.
   */
  protected requireSandbox(): CompleteSandbox {
    this.assertNotClosed();
    if (this.currentState !== 'ready' || !this.sandbox) {
      throw new WsError('NOT_READY', `The workspace ${this.id} is not initialized; call initialize() first`);
    }
    return this.sandbox;
  }

  /** @throws WsError `DISPOSED` once `close()` has started. */
  protected assertNotClosed(): void {
    if (this.currentState === 'closed' || this.currentState === 'closing') {
      throw new WsError('DISPOSED', `The workspace ${this.id} is closed`);
    }
  }

  private async layOut(options: CallOptions): Promise<void> {
    const sandbox = this.sandbox;
    if (!sandbox) throw new WsError('NOT_READY', 'No sandbox');
    const { workdir, dataDir, skillSeedDir, sessionsDir } = this.paths;
    await makeDirectories(sandbox, [workdir, dataDir, skillSeedDir, sessionsDir], options);
  }
}

/** Creates directories (and parents): natively in parallel, or in one `mkdir -p` through exec. */
export async function makeDirectories(
  sandbox: CompleteSandbox,
  paths: readonly string[],
  options: CallOptions = {},
): Promise<void> {
  if (sandbox.native.mkdir) {
    for (const path of paths) await sandbox.mkdir(path, { recursive: true, ...signalOf(options) });
    return;
  }
  const result = await sandbox.exec(['mkdir', '-p', '--', ...paths], { cwd: '/', ...signalOf(options) });
  if (result.exitCode !== 0) {
    throw new WsError('BACKEND_ERROR', `Creating ${paths.join(', ')} failed: ${result.stderrText.trim()}`, {
      details: { paths },
    });
  }
}

/** Removes paths recursively, ignoring missing ones: natively, or in one `rm -rf` through exec. */
export async function removeAll(
  sandbox: CompleteSandbox,
  paths: readonly string[],
  options: CallOptions = {},
): Promise<void> {
  if (sandbox.native.remove) {
    await Promise.all(
      paths.map((path) => sandbox.remove(path, { recursive: true, force: true, ...signalOf(options) })),
    );
    return;
  }
  const result = await sandbox.exec(['rm', '-rf', '--', ...paths], { cwd: '/', ...signalOf(options) });
  if (result.exitCode !== 0) {
    throw new WsError('BACKEND_ERROR', `Removing ${paths.join(', ')} failed: ${result.stderrText.trim()}`, {
      details: { paths },
    });
  }
}

function signalOf(options: CallOptions): CallOptions {
  return options.signal ? { signal: options.signal } : {};
}

/** Waits for `promise`, but rejects with `ABORTED` as soon as `signal` fires (the work goes on). */
export function raceSignal<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(abortError(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
