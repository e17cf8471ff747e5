import type { McpServerSpec } from '@ws/core';
import {
  type McpConnector,
  type McpScopeKey,
  type McpSession,
  mcpHttpProtocol,
  throwIfAborted,
} from '@ws/core/backend';

/** Options of {@link HostMcpConnector}. */
export interface HostMcpConnectorOptions {
  /** Working directory of stdio servers that name none. */
  cwd: string;
  /** Variables added to the environment of every stdio server. */
  env?: Readonly<Record<string, string>>;
}

/**
 * True when an HTTP server is reached with the older HTTP+SSE transport: `type` `sse`, or `http` (the
 * default) with a URL path ending in `/sse` or `/messages/`, as AgentScope chooses.
 */
export function usesSseTransport(url: string, type: 'http' | 'sse' | 'streamable-http' = 'http'): boolean {
  return mcpHttpProtocol({ type, url }) === 'sse';
}

/**
 * Runs MCP clients on the host with `@modelcontextprotocol/sdk`: stdio servers as child processes,
 * HTTP servers over streamable HTTP (or SSE: see {@link usesSseTransport}). The SDK is loaded on the first
 * connection, so a workspace that declares no MCP server never pays for it.
 */
export class HostMcpConnector implements McpConnector {
  constructor(private readonly options: HostMcpConnectorOptions) {}

  async connect(
    spec: McpServerSpec,
    _scope: McpScopeKey,
    options: { signal?: AbortSignal } = {},
  ): Promise<McpSession> {
    throwIfAborted(options.signal);
    const { connectSdkSession } = await import('./mcp-sdk-session.js');
    return connectSdkSession(spec, this.options, options);
  }
}
