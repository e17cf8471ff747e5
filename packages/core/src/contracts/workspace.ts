import type { McpClient, McpScope, McpServerSpec } from './mcp.js';
import type { Offloader } from './offloader.js';
import type { CompleteSandbox, SandboxCapabilities } from './sandbox.js';
import type { Skill, SkillArchive } from './skill.js';
import type { Tool } from './tool.js';

/** Options every async workspace method takes. */
export interface CallOptions {
  /** Aborting stops the work the call started and rejects with `ABORTED`. */
  signal?: AbortSignal;
}

/** Where a workspace is in its life. */
export type WorkspaceState = 'created' | 'initializing' | 'ready' | 'closing' | 'closed';

/** How strongly a backend separates the agent's commands from the host. */
export type IsolationLevel = 'none' | 'namespace' | 'container' | 'vm';

/** What a workspace can do, as data; tests and error paths key off it. */
export interface WorkspaceCapabilities {
  /** The backend's name (`"local"`). */
  readonly backend: string;
  /** Files survive `close()` and a later workspace with the same identity re-attaches to them. */
  readonly persistent: boolean;
  /** How strongly commands are separated from the host (see docs/SECURITY.md). */
  readonly isolation: IsolationLevel;
  /** MCP servers can be declared and used. */
  readonly mcp: boolean;
  /** The sandbox operations available (natively or through core's fallbacks). */
  readonly sandbox: SandboxCapabilities;
}

/** Lifecycle half of the {@link Workspace} protocol. */
export interface WorkspaceLifecycle extends AsyncDisposable {
  /** The workspace id (validated as one path segment). */
  readonly id: string;
  /** The root directory the agent works in, as a path inside the sandbox. */
  readonly workdir: string;
  /** Where the workspace is in its life. */
  readonly state: WorkspaceState;
  /** What this workspace can do. */
  readonly capabilities: WorkspaceCapabilities;
  /**
   * Creates or re-attaches the sandbox, lays out the workdir and restores persisted state.
   * Idempotent; concurrent calls share one initialization. A failed initialization releases what it
   * acquired and may be retried.
   * @throws WsError `DISPOSED` after `close()`; `ABORTED`; backend errors.
   */
  initialize(options?: CallOptions): Promise<void>;
  /**
   * Releases the sandbox and every live client; what `close` keeps depends on the backend (files of a
   * persistent workspace stay). Idempotent. After it, every method but `close`/`destroy` throws `DISPOSED`.
   */
  close(options?: CallOptions): Promise<void>;
  /** Deletes `.mcp`, `skills/`, `sessions/` and `data/`, then lays the workdir out again. The sandbox stays up. */
  reset(options?: CallOptions): Promise<void>;
  /** Closes the workspace and deletes everything it owns (the workdir, the container, the volume). */
  destroy(options?: CallOptions): Promise<void>;
  /** A `<workspace>` prompt fragment naming the backend and the workdir, for the system prompt. */
  getInstructions(): string;
  /**
   * The live sandbox. Re-read it after a reconnect rather than keeping it.
   * @throws WsError `NOT_READY` before `initialize()`, `DISPOSED` after `close()`.
   */
  getSandbox(): CompleteSandbox;
}

/** Discovery and dynamic management half of the {@link Workspace} protocol. */
export interface WorkspaceResources {
  /**
   * The built-in tools (`Bash`, `Edit`, `Glob`, `Grep`, `Read`, `Write`), bound to this workspace.
   * Tools listed for one `agentId` share that agent's read-before-edit memory.
   */
  listTools(options?: { agentId?: string } & CallOptions): Promise<Tool[]>;
  /** The live MCP clients of one (agent, session) scope, connecting declared servers as needed. */
  listMcps(scope?: McpScope & CallOptions): Promise<McpClient[]>;
  /** Declares and connects an MCP server in one scope. @throws WsError `CONFLICT` for a duplicate name. */
  addMcp(spec: McpServerSpec, scope?: McpScope & CallOptions): Promise<void>;
  /** Removes an MCP server from one scope; an unknown name is a no-op. */
  removeMcp(name: string, scope?: McpScope & CallOptions): Promise<void>;
  /** The skills of one agent's partition (the `default` partition when no agent is named). */
  listSkills(options?: { agentId?: string } & CallOptions): Promise<Skill[]>;
  /** Installs a skill from a host directory or an archive into one agent's partition; returns it. */
  addSkill(
    source: string | SkillArchive,
    options?: { agentId?: string; maxExtractedBytes?: number } & CallOptions,
  ): Promise<Skill>;
  /** Removes a skill by its front-matter name. @throws WsError `NOT_FOUND` for an unknown name. */
  removeSkill(name: string, options?: { agentId?: string } & CallOptions): Promise<void>;
  /** Forgets a session: closes its MCP clients, drops its declarations, deletes `sessions/<id>`. */
  purgeSession(scope: McpScope & CallOptions): Promise<void>;
  /** Forgets an agent's skill partition (`skills/<agentId>`). */
  purgeAgent(options: { agentId: string } & CallOptions): Promise<void>;
}

/**
 * An agent's workspace: tools, MCP servers, skills and offloading over one execution backend, with
 * the same behaviour on every backend.
 */
export interface Workspace extends WorkspaceLifecycle, WorkspaceResources, Offloader {}
