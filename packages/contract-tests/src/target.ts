import type { McpServerSpec, SearchMode, Workspace } from '@ws/core';

/** The workspace shape the conformance suite drives. */
export type WorkspaceUnderTest = Workspace & { readonly warnings?: readonly string[] };

/** Options the suite passes to {@link ConformanceTarget.create}; a backend forwards them to its workspace. */
export interface CreateOptions {
  workspaceId: string;
  /** Forwarded as the workspace's `searchMode`, so Grep and Glob run with ripgrep and without. */
  searchMode?: SearchMode;
  /** Forwarded as the workspace's `defaultMcps`. */
  defaultMcps?: readonly McpServerSpec[];
  /** Forwarded as the workspace's `maxLiveStatefulMcps`. */
  maxLiveStatefulMcps?: number;
  /** Forwarded as the workspace's `skillPaths` (host folders). */
  skillPaths?: readonly string[];
}

/** What a backend hands the conformance suite. */
export interface ConformanceTarget {
  /** The backend's name, shown in the suite's title (`"local"`). */
  readonly name: string;
  /**
   * Creates a new workspace, not yet initialized. Two calls with the same `workspaceId` must reach
   * the same persistent state (the same host directory, container name or sandbox label), so that
   * re-attach can be tested.
   */
  create(options: CreateOptions): WorkspaceUnderTest | Promise<WorkspaceUnderTest>;
  /** When it returns a reason, the whole suite is skipped and the reason printed (engine missing). */
  skipReason?(): string | undefined | Promise<string | undefined>;
  /** Time limit of one case in milliseconds. Default 60 000. */
  readonly caseTimeoutMs?: number;
  /** Size of the output the output-cap case produces. Default 1 GiB. */
  readonly largeOutputBytes?: number;
  /** Size of the large-file case. Default 64 MiB. */
  readonly largeFileBytes?: number;
  /** How long the long MCP tool call runs (it must succeed when its own timeout allows it). Default 45 000 ms. */
  readonly longMcpCallMs?: number;
}

/** The resolved settings one area works with. */
export interface AreaContext {
  readonly target: ConformanceTarget;
  /** Creates a workspace through the target with a fresh, unique id and remembers it for cleanup. */
  create(workspaceId?: string, options?: Omit<CreateOptions, 'workspaceId'>): Promise<WorkspaceUnderTest>;
  /** A fresh, unique workspace id. */
  newId(): string;
  readonly caseTimeoutMs: number;
  readonly largeOutputBytes: number;
  readonly largeFileBytes: number;
  readonly longMcpCallMs: number;
}
