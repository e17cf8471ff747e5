import { posix } from 'node:path';
import { fromErrno, isWsError, throwIfAborted, WsError } from '../contracts/errors.js';
import type { McpClient, McpScope, McpServerSpec } from '../contracts/mcp.js';
import type { DataBlock, OffloadableToolResult } from '../contracts/offloader.js';
import type { CompleteSandbox, FileOptions } from '../contracts/sandbox.js';
import type { Skill, SkillArchive } from '../contracts/skill.js';
import type { Tool } from '../contracts/tool.js';
import type {
  CallOptions,
  Workspace,
  WorkspaceCapabilities,
  WorkspaceState,
} from '../contracts/workspace.js';
import type { CommonWorkspaceOptions } from '../contracts/workspace-options.js';
import { fileStore, makeDirectories, raceSignal, removeAll, signalOf } from '../internal/engine-support.js';
import { DEFAULT_WORKSPACE_INSTRUCTIONS, formatInstructions } from '../internal/instructions.js';
import { type LayoutPaths, layoutPaths } from '../internal/layout.js';
import { McpRegistry } from '../internal/mcp/registry.js';
import { OffloadStore } from '../internal/offload/offloader.js';
import { SkillStore } from '../internal/skills/skill-store.js';
import { createBuiltinTools } from '../internal/tools/builtin-tools.js';
import { ReadCache } from '../internal/tools/read-cache.js';
import { DEFAULT_MODEL_INPUT_TYPES } from '../internal/tools/read-tool.js';
import { SearchTools } from '../internal/tools/search-tools.js';
import { withBoundedReads } from './bounded-read.js';
import { generateId, validateId } from './ids.js';
import type { McpConnector } from './mcp-connector.js';
import { WorkspaceObserver } from './observer.js';
import { withOomReports } from './oom-report.js';
import { type CheckedPackages, checkPackages, installPackages } from './packages.js';
import { completeSandbox } from './posix-fallbacks.js';
import type { Provider, ProviderSession } from './provider.js';
import { loadTracing } from './tracing.js';

/** Options of {@link WorkspaceEngine}: the common ones plus the backend's provider. */
export interface WorkspaceEngineOptions<P extends Provider = Provider> extends CommonWorkspaceOptions {
  /** The backend's provider. */
  provider: P;
}

/**
 * The one implementation of the workspace protocol, shared by every backend. A backend supplies a
 * {@link Provider}; its public class (`LocalWorkspace`, …) extends this engine.
 *
 * Constructing an engine does no I/O. `initialize()` opens the sandbox, lays out the workdir,
 * installs `packages` (once per sandbox), restores `.mcp` and seeds skills.
 */
export class WorkspaceEngine<P extends Provider = Provider> implements Workspace {
  /** The workspace id. */
  readonly id: string;
  /** The backend's provider, which opens, re-attaches and tears down the sandbox. */
  protected readonly provider: P;
  private readonly instructionsTemplate: string;
  private currentState: WorkspaceState = 'created';
  private sandbox: CompleteSandbox | undefined;
  private mcpConnector: McpConnector | undefined;
  /** The backend's session of the open sandbox. */
  private session: ProviderSession | undefined;
  private openedWorkdir: string | undefined;
  private initializing: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  private destroying: Promise<void> | undefined;
  private readonly search: SearchTools;
  private readonly modelInputTypes: readonly string[];
  private readonly readCaches = new Map<string, ReadCache>();
  private readonly offload: OffloadStore;
  private readonly skills: SkillStore;
  private readonly mcp: McpRegistry;
  private seedWarnings: string[] = [];
  private sessionWarnings: readonly string[] = [];
  private packageWarnings: readonly string[] = [];
  private readonly packages: CheckedPackages | undefined;
  /** Where the workspace's events go (`onEvent`, `DEBUG=ws:*`, OpenTelemetry). */
  private readonly observer: WorkspaceObserver;

  /**
   * Checks the options and does no I/O: the workspace starts at `initialize()`.
   * @throws WsError `INVALID_ARGUMENT` for an unsafe workspace id, an invalid default MCP spec or a
   * malformed `packages` (a spec starting with `-` or holding a newline or NUL).
   */
  constructor(options: WorkspaceEngineOptions<P>) {
    this.provider = options.provider;
    this.packages = checkPackages(options.packages);
    this.id =
      options.workspaceId === undefined ? generateId() : validateId(options.workspaceId, 'workspaceId');
    this.instructionsTemplate = options.instructions ?? DEFAULT_WORKSPACE_INSTRUCTIONS;
    this.observer = new WorkspaceObserver(
      { workspaceId: this.id, backend: this.provider.backend },
      options.onEvent,
    );
    this.search = new SearchTools(options.searchMode ?? 'auto');
    this.modelInputTypes = [...(options.modelInputTypes ?? DEFAULT_MODEL_INPUT_TYPES)];
    const sandbox = () => this.liveSandbox();
    const paths = () => this.paths;
    this.offload = new OffloadStore(sandbox, paths);
    this.skills = new SkillStore(sandbox, paths, [...(options.skillPaths ?? [])]);
    this.mcp = new McpRegistry({
      connector: () => (this.noMcp === undefined ? this.mcpConnector : undefined),
      unavailable: () => this.noMcp,
      backend: this.provider.backend,
      defaults: options.defaultMcps ?? [],
      maxLiveStateful: options.maxLiveStatefulMcps,
      store: () => (this.provider.persistent ? fileStore(sandbox, () => paths().mcpFile) : undefined),
    });
  }

  /**
   * Constructs a workspace of the class it is called on and initializes it, in one step
   * (`await LocalWorkspace.open({ hostWorkdir })`). `signal` aborts the initialization.
   * @throws what the constructor and `initialize()` throw; a failed initialization leaves nothing open.
   */
  static async open<W extends Workspace, O>(
    this: new (
      options: O,
    ) => W,
    options: O & { signal?: AbortSignal },
  ): Promise<W> {
    const workspace = new this(options);
    await workspace.initialize(options.signal ? { signal: options.signal } : {});
    return workspace;
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
      mcp: this.sandbox ? this.mcpConnector !== undefined && this.noMcp === undefined : this.provider.mcp,
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

  /**
   * Problems met at initialize (what the backend reported while opening, a `packages` record it could
   * not read or write, skill paths skipped, `.mcp` entries dropped) and by MCP connections.
   */
  get warnings(): readonly string[] {
    return [...this.sessionWarnings, ...this.packageWarnings, ...this.seedWarnings, ...this.mcp.warnings];
  }

  /**
   * Why the open sandbox cannot run MCP servers, when its backend said: read live, as a backend whose
   * gateway starts after the opening learns it then.
   */
  private get noMcp(): string | undefined {
    return this.session?.noMcp;
  }

  /** The absolute paths of the workdir's layout entries. */
  protected get paths(): LayoutPaths {
    return layoutPaths(this.workdir);
  }

  async initialize(options: CallOptions = {}): Promise<void> {
    this.assertNotClosed();
    throwIfAborted(options.signal);
    if (this.currentState === 'ready') {
      if (!this.provider.alive || (await this.provider.alive())) return;
      await this.reopen();
    }
    this.initializing ??= this.runInitialize(options).finally(() => {
      this.initializing = undefined;
    });
    await raceSignal(this.initializing, options.signal);
  }

  private async runInitialize(options: CallOptions): Promise<void> {
    this.currentState = 'initializing';
    const began = performance.now();
    const { emit } = this.observer;
    try {
      const [session] = await Promise.all([
        this.provider.open({ ...options, workspaceId: this.id, events: emit }),
        loadTracing(),
      ]);
      const sandbox = withBoundedReads(completeSandbox(session.sandbox));
      this.sandbox = this.observer.sandbox(
        session.oomKills ? await withOomReports(sandbox, session.oomKills) : sandbox,
      );
      this.mcpConnector = session.mcp;
      this.session = session;
      this.openedWorkdir = session.workdir;
      this.sessionWarnings = session.warnings ?? [];
      throwIfAborted(options.signal);
      // Read (never run) side by side with the layout: a workdir not made yet has no `.mcp`.
      const restoring = this.mcp.restore().then(
        () => undefined,
        (error: unknown) => ({ error }),
      );
      // A workdir with skills/ but without skills/.seed may hold skills of the older flat layout,
      // moved in by prepare. Looked at only where looking costs less than the listing it saves.
      const flatSkills =
        !this.sandbox.native.stat ||
        (
          await Promise.all([
            this.sandbox.exists(this.paths.skillSeedDir, options).then((seeded) => !seeded),
            this.sandbox.exists(this.paths.skillsDir, options),
          ])
        ).every(Boolean);
      await this.layOut(options);
      // Before anything else runs in the sandbox (a restored MCP server may need a package).
      if (this.packages)
        this.packageWarnings = (
          await installPackages(this.sandbox, this.id, this.packages, signalOf(options))
        ).warnings;
      const restored = await restoring;
      if (restored) throw restored.error;
      this.seedWarnings = await this.skills.prepare({ ...options, flatSkills });
      throwIfAborted(options.signal);
      this.currentState = 'ready';
      for (const warning of this.warnings) emit({ type: 'warning', warning });
      emit({ type: 'workspace.opened', durationMs: performance.now() - began, workdir: session.workdir });
    } catch (error) {
      this.sandbox = undefined;
      this.mcpConnector = undefined;
      this.session = undefined;
      this.openedWorkdir = undefined;
      await this.provider.close({}).catch(() => {});
      this.currentState = 'created';
      const failure = isWsError(error)
        ? error
        : fromErrno(error, `Initializing the ${this.provider.backend} workspace failed`);
      emit({ type: 'workspace.open_failed', durationMs: performance.now() - began, error: failure.message });
      throw failure;
    }
  }

  /** Forgets a sandbox the backend lost (a container removed from outside) so `initialize()` opens a new one. */
  private async reopen(): Promise<void> {
    if (this.currentState !== 'ready') return;
    this.currentState = 'initializing';
    await this.mcp.closeAll().catch(() => {});
    await this.provider.close({}).catch(() => {});
    this.skills.forgetEquipped();
    this.sandbox = undefined;
    this.mcpConnector = undefined;
    this.session = undefined;
    this.currentState = 'created';
  }

  async close(options: CallOptions = {}): Promise<void> {
    if (this.currentState === 'closed') return;
    this.closing ??= this.runClose(options);
    await this.closing;
  }

  private async runClose(options: CallOptions): Promise<void> {
    if (this.initializing) await this.initializing.catch(() => {});
    const began = performance.now();
    const wasOpen = this.currentState === 'ready';
    this.currentState = 'closing';
    try {
      if (wasOpen) {
        await this.mcp.closeAll().catch(() => {});
        await this.provider.close(options);
      }
    } finally {
      this.skills.forgetEquipped();
      this.sandbox = undefined;
      this.mcpConnector = undefined;
      this.session = undefined;
      this.currentState = 'closed';
      if (wasOpen) this.observer.emit({ type: 'workspace.closed', durationMs: performance.now() - began });
    }
  }

  async reset(options: CallOptions = {}): Promise<void> {
    const sandbox = this.requireSandbox();
    throwIfAborted(options.signal);
    await this.mcp.clear();
    this.skills.forgetEquipped();
    for (const cache of this.readCaches.values()) cache.forget();
    const { mcpFile, skillsDir, sessionsDir, dataDir } = this.paths;
    await removeAll(sandbox, [mcpFile, skillsDir, sessionsDir, dataDir], options);
    await this.layOut(options);
  }

  async destroy(options: CallOptions = {}): Promise<void> {
    this.destroying ??= (async () => {
      await this.close(options);
      const began = performance.now();
      await this.provider.destroy({ ...options, workspaceId: this.id, events: this.observer.emit });
      this.observer.emit({ type: 'workspace.destroyed', durationMs: performance.now() - began });
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
    return this.observer.tools(
      createBuiltinTools({
        sandbox: () => this.requireSandbox(),
        workdir: this.workdir,
        readCache,
        search: this.search,
        modelInputTypes: this.modelInputTypes,
      }),
    );
  }

  async listMcps(scope: McpScope & CallOptions = {}): Promise<McpClient[]> {
    this.requireSandbox();
    return this.observer.mcpClients(await this.mcp.list(scope, signalOf(scope)));
  }

  async addMcp(spec: McpServerSpec, scope: McpScope & CallOptions = {}): Promise<void> {
    this.requireSandbox();
    throwIfAborted(scope.signal);
    await this.mcp.add(spec, scope, signalOf(scope));
  }

  async removeMcp(name: string, scope: McpScope & CallOptions = {}): Promise<void> {
    this.requireSandbox();
    throwIfAborted(scope.signal);
    await this.mcp.remove(name, scope);
  }

  async listSkills(options: { agentId?: string } & CallOptions = {}): Promise<Skill[]> {
    this.requireSandbox();
    return this.skills.list(options);
  }

  async addSkill(
    source: string | SkillArchive,
    options: { agentId?: string; maxExtractedBytes?: number } & CallOptions = {},
  ): Promise<Skill> {
    this.requireSandbox();
    return this.skills.add(source, options);
  }

  async removeSkill(name: string, options: { agentId?: string } & CallOptions = {}): Promise<void> {
    this.requireSandbox();
    await this.skills.remove(name, options);
  }

  /** Closes the scope's MCP connections, drops its declarations, and deletes `sessions/<sessionId>`. */
  async purgeSession(scope: McpScope & CallOptions): Promise<void> {
    const sandbox = this.requireSandbox();
    throwIfAborted(scope.signal);
    await this.mcp.purge(scope);
    if (scope.sessionId) {
      const directory = posix.join(this.paths.sessionsDir, validateId(scope.sessionId, 'sessionId'));
      await sandbox.remove(directory, { recursive: true, force: true, ...signalOf(scope) });
    }
  }

  /** Deletes the agent's skill partition; its next skill call copies the seed again. */
  async purgeAgent(options: { agentId: string } & CallOptions): Promise<void> {
    this.requireSandbox();
    throwIfAborted(options.signal);
    await this.skills.purgeAgent(options.agentId, options);
  }

  async offloadData(block: DataBlock, options: FileOptions = {}): Promise<DataBlock> {
    this.requireSandbox();
    return this.offload.offloadData(block, options);
  }

  async offloadContext(
    sessionId: string,
    messages: readonly unknown[],
    options: FileOptions = {},
  ): Promise<string> {
    this.requireSandbox();
    return this.offload.offloadContext(sessionId, messages, options);
  }

  async offloadToolResult(
    sessionId: string,
    result: OffloadableToolResult,
    options: FileOptions = {},
  ): Promise<string> {
    this.requireSandbox();
    return this.offload.offloadToolResult(sessionId, result, options);
  }

  getInstructions(): string {
    const workdir = this.openedWorkdir ?? this.provider.expectedWorkdir ?? '<assigned at initialize>';
    return formatInstructions(this.instructionsTemplate, { backend: this.provider.description, workdir });
  }

  getSandbox(): CompleteSandbox {
    return this.requireSandbox();
  }

  /** `close()`, for `await using`. */
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

  /** The open sandbox for the subsystems, which also run while `initialize()` is in progress. */
  private liveSandbox(): CompleteSandbox {
    this.assertNotClosed();
    if (!this.sandbox)
      throw new WsError('NOT_READY', `The workspace ${this.id} is not initialized; call initialize() first`);
    return this.sandbox;
  }

  /** @throws WsError `DISPOSED` once `close()` has started. */
  protected assertNotClosed(): void {
    if (this.currentState === 'closed' || this.currentState === 'closing') {
      throw new WsError('DISPOSED', `The workspace ${this.id} is closed`);
    }
  }

  private async layOut(options: CallOptions): Promise<void> {
    const { workdir, dataDir, skillSeedDir, sessionsDir } = this.paths;
    await makeDirectories(this.liveSandbox(), [workdir, dataDir, skillSeedDir, sessionsDir], options);
  }
}
