import type { Tool, ToolCallOptions, ToolResult } from './tool.js';

/** An MCP server started as a child process speaking MCP over stdio. */
export interface McpStdioTransport {
  /** The transport's kind. */
  readonly type: 'stdio';
  /** The executable, looked up on the PATH where the server runs (inside the sandbox, or on the host for local). */
  readonly command: string;
  /** Its arguments, passed verbatim (no shell). */
  readonly args?: readonly string[];
  /** Variables added to the server's environment. */
  readonly env?: Readonly<Record<string, string>>;
  /** Its working directory. Default: the workspace's workdir. */
  readonly cwd?: string;
}

/**
 * An MCP server reached over HTTP. `http` chooses the protocol by the URL as AgentScope does: the older
 * HTTP+SSE transport when the path ends in `/sse` or `/messages/`, streamable HTTP otherwise. `sse`
 * and `streamable-http` name the protocol whatever the URL.
 */
export interface McpHttpTransport {
  /** The transport's kind: `http` (by the URL), `sse` or `streamable-http`. */
  readonly type: 'http' | 'sse' | 'streamable-http';
  /** The server's URL (as reached from where MCP clients run). */
  readonly url: string;
  /** Headers sent with every request (an `Authorization` header, say). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Time limit of one HTTP request, in milliseconds. Default: 30 000. */
  readonly timeoutMs?: number;
}

/** A declared MCP server. */
export interface McpServerSpec {
  /** The server's name, matching `^[a-zA-Z0-9_-]+$`; tools appear as `mcp__<name>__<tool>`. */
  readonly name: string;
  /** How the server is reached. */
  readonly transport: McpStdioTransport | McpHttpTransport;
  /**
   * Keep one connection open per scope (required for stdio). A stateless HTTP server is connected
   * per call. Default: true for stdio, false for HTTP.
   */
  readonly stateful?: boolean;
  /** Only these tools are exposed. Must not overlap `disableTools`. */
  readonly enableTools?: readonly string[] | null;
  /** These tools are hidden. */
  readonly disableTools?: readonly string[] | null;
  /** Time limit of one tool call, in milliseconds. Default: none. */
  readonly executionTimeoutMs?: number | null;
}

/** The (agent, session) pair MCP declarations are scoped to. Missing ids mean the shared scope. */
export interface McpScope {
  /** The agent; missing or `''` means every agent's shared scope. */
  readonly agentId?: string;
  /** The session; missing or `''` means the agent's shared scope. */
  readonly sessionId?: string;
}

/** A live MCP client of one scope. */
export interface McpClient {
  /** The server's name (the spec's `name`). */
  readonly name: string;
  /** A copy of the server's declaration. */
  readonly spec: McpServerSpec;
  /** The server's tools as {@link Tool}s named `mcp__<server>__<tool>`, filtered by enable/disable. */
  listTools(options?: { signal?: AbortSignal }): Promise<Tool[]>;
  /** Calls one tool by its server-side name. */
  callTool(name: string, input: Record<string, unknown>, options?: ToolCallOptions): Promise<ToolResult>;
}
