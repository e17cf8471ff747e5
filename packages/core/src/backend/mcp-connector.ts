import type { McpServerSpec } from '../contracts/mcp.js';
import type { JsonSchema, ToolResult } from '../contracts/tool.js';

/** A tool as an MCP server lists it. */
export interface McpToolInfo {
  /** The tool's name on its server. */
  readonly name: string;
  /** A display name, when the server gives one. */
  readonly title?: string;
  /** What the tool does, as the server says. */
  readonly description?: string;
  /** The JSON Schema of its input. */
  readonly inputSchema?: JsonSchema;
  /** The server's hints about the tool (MCP tool annotations). */
  readonly annotations?: {
    /** A display name for the tool. */
    readonly title?: string;
    /** Whether the tool leaves its environment unchanged. */
    readonly readOnlyHint?: boolean;
    /** Whether the tool may delete or overwrite things (meaningful when it is not read-only). */
    readonly destructiveHint?: boolean;
    /** Whether calling the tool again with the same input has no further effect. */
    readonly idempotentHint?: boolean;
    /** Whether the tool reaches things outside a closed domain (the web, other services). */
    readonly openWorldHint?: boolean;
  };
}

/** Options of {@link McpSession.callTool}. */
export interface McpCallOptions {
  /** This call's own time limit in milliseconds; none when undefined. */
  timeoutMs?: number | undefined;
  /** Cancels the call when it fires. */
  signal?: AbortSignal | undefined;
}

/** One open connection to one MCP server, for one (agent, session) scope. */
export interface McpSession {
  /** The server's tools, unfiltered (every page). */
  listTools(options?: { signal?: AbortSignal }): Promise<McpToolInfo[]>;
  /**
   * Calls a tool. A tool's own failure is a result with `isError`; a transport failure or a timeout
   * throws a WsError (`TIMEOUT`, `BACKEND_UNAVAILABLE`, …); an abort throws `ABORTED`.
   */
  callTool(name: string, input: Record<string, unknown>, options?: McpCallOptions): Promise<ToolResult>;
  /** Closes the connection (and stops a stdio server). Idempotent. */
  close(): Promise<void>;
}

/** The (agent, session) pair a connection belongs to; `''` is the shared scope. */
export interface McpScopeKey {
  /** The agent the connection serves. */
  readonly agentId: string;
  /** The agent's session the connection serves. */
  readonly sessionId: string;
}

/**
 * Where MCP servers run: on the host (`@ws/local`) or inside the sandbox behind the gateway. The engine
 * asks its provider for one; the registry uses it for every connection.
 */
export interface McpConnector {
  /** Connects to one server for one scope and lists its tools once (so a broken server fails here). */
  connect(spec: McpServerSpec, scope: McpScopeKey, options?: { signal?: AbortSignal }): Promise<McpSession>;
}
