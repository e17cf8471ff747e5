import { type McpServerSpec, WsError } from '@ws/core';
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

/** The package the host's MCP clients need: an optional peer dependency of `@ws/local`. */
export const MCP_SDK_PACKAGE = '@modelcontextprotocol/sdk';

/**
 * The module that speaks MCP through the SDK, loaded once it is needed.
 * @throws WsError `CAPABILITY_UNSUPPORTED` naming the package to install when the SDK is not installed.
 */
async function loadSdkSession(): Promise<typeof import('./mcp-sdk-session.js')> {
  try {
    return await import('./mcp-sdk-session.js');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const missing =
      (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') &&
      String((error as Error).message).includes(MCP_SDK_PACKAGE);
    if (!missing) throw error;
    throw new WsError(
      'CAPABILITY_UNSUPPORTED',
      `MCP servers on the local backend need ${MCP_SDK_PACKAGE}, which is not installed: npm install ${MCP_SDK_PACKAGE}`,
      { cause: error, details: { package: MCP_SDK_PACKAGE } },
    );
  }
}

/**
 * Runs MCP clients on the host with `@modelcontextprotocol/sdk`: stdio servers as child processes,
 * HTTP servers over streamable HTTP (or SSE: see {@link usesSseTransport}). The SDK is loaded on the first
 * connection, so a workspace that declares no MCP server never pays for it; it is an optional peer
 * dependency of `@ws/local`, and an MCP server declared without it fails with an error naming it.
 */
export class HostMcpConnector implements McpConnector {
  constructor(private readonly options: HostMcpConnectorOptions) {}

  async connect(
    spec: McpServerSpec,
    _scope: McpScopeKey,
    options: { signal?: AbortSignal } = {},
  ): Promise<McpSession> {
    throwIfAborted(options.signal);
    const { connectSdkSession } = await loadSdkSession();
    return connectSdkSession(spec, this.options, options);
  }
}
