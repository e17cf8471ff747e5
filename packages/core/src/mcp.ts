import type { Tool, ToolCallOptions, ToolResult } from './tool.js';

/** An MCP server started as a child process speaking MCP over stdio. */
export interface McpStdioTransport {
  readonly type: 'stdio';
  readonly command: string;
  readonly args?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
}

/** An MCP server reached over HTTP: streamable HTTP, or SSE when the URL path ends in `/sse`. */
export interface McpHttpTransport {
  readonly type: 'http';
  readonly url: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** Time limit of one HTTP request, in milliseconds. Default: 30 000. */
  readonly timeoutMs?: number;
}

/** A declared MCP server. */
export interface McpServerSpec {
  /** The server's name, matching `^[a-zA-Z0-9_-]+$`; tools appear as `mcp__<name>__<tool>`. */
  readonly name: string;
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
  readonly agentId?: string;
  readonly sessionId?: string;
}

/** A live MCP client of one scope. */
export interface McpClient {
  readonly name: string;
  readonly spec: McpServerSpec;
  /** The server's tools as {@link Tool}s named `mcp__<server>__<tool>`, filtered by enable/disable. */
  listTools(options?: { signal?: AbortSignal }): Promise<Tool[]>;
  /** Calls one tool by its server-side name. */
  callTool(name: string, input: Record<string, unknown>, options?: ToolCallOptions): Promise<ToolResult>;
}
