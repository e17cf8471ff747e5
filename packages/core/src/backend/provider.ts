import type { BackendEvent } from '../contracts/events.js';
import type { Sandbox } from '../contracts/sandbox.js';
import type { CallOptions, IsolationLevel } from '../contracts/workspace.js';
import type { McpConnector } from './mcp-connector.js';

/** Options of {@link Provider.open} and {@link Provider.destroy}. */
export interface ProviderOpenOptions extends CallOptions {
  /** The workspace's id (validated as one path segment): what the backend names and labels things by. */
  readonly workspaceId: string;
  /**
   * Reports what the backend does that the user may want to see: the sandbox created or re-attached,
   * the gateway's starts and failures, images pulled, retries. The engine adds the workspace's id,
   * backend and time, and hands it to `onEvent` and `DEBUG=ws:*`. Absent when called outside a workspace.
   */
  readonly events?: ((event: BackendEvent) => void) | undefined;
}

/** What a provider hands the engine once its sandbox is up. */
export interface ProviderSession {
  /** The sandbox; core completes it with POSIX fallbacks. */
  readonly sandbox: Sandbox;
  /** The workdir inside the sandbox (absolute). */
  readonly workdir: string;
  /** Where this backend runs MCP servers now; absent when it cannot (MCP calls then fail with `CAPABILITY_UNSUPPORTED`). */
  readonly mcp?: McpConnector | undefined;
  /**
   * Why `mcp` is absent or cannot run servers, when the backend knows (no node runs in the sandbox):
   * part of the MCP calls' error. Read live: a backend whose gateway starts after the opening may
   * learn it then.
   */
  readonly noMcp?: string | undefined;
  /** What went wrong but did not stop the opening (several sandboxes matched the id, no gateway); shown in `warnings`. */
  readonly warnings?: readonly string[] | undefined;
  /**
   * How many processes the sandbox's memory limit has killed so far (see `cgroupOomKills`): given, the
   * engine reads it after a command killed by SIGKILL and marks the result `outOfMemory`.
   */
  readonly oomKills?: (() => Promise<number | undefined>) | undefined;
}

/**
 * One backend's lifecycle: creates or re-attaches the sandbox for a workspace id and tears it down.
 * The engine calls `open` once per initialization and `close` or `destroy` once at the end.
 */
export interface Provider {
  /** The backend's name (`"local"`). */
  readonly backend: string;
  /** How the backend is described to the model (`"local"`, `"Docker-based"`). */
  readonly description: string;
  /** The workdir as known before `open` (some backends learn it only then). */
  readonly expectedWorkdir: string | undefined;
  /** Whether the files outlive `close()` (a re-open of the id finds them). */
  readonly persistent: boolean;
  /** What stands between the agent's commands and the host. */
  readonly isolation: IsolationLevel;
  /** Whether this backend can run MCP servers (before `open`; the session's `mcp` is the final word). */
  readonly mcp: boolean;
  /** Creates or re-attaches the sandbox of the workspace `options.workspaceId`. */
  open(options: ProviderOpenOptions): Promise<ProviderSession>;
  /** Releases the sandbox; a persistent backend keeps the files. Must tolerate a half-open state. */
  close(options: CallOptions): Promise<void>;
  /**
   * Whether the sandbox of the last `open` still exists (a container removed from outside does not).
   * When it answers false, `initialize()` on a ready workspace opens the sandbox again.
   */
  alive?(): Promise<boolean>;
  /** Deletes everything the provider owns for the workspace `options.workspaceId`. Called after `close`. */
  destroy(options: ProviderOpenOptions): Promise<void>;
}
