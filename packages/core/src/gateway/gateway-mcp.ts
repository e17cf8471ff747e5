// MCP servers inside the sandbox, held by the gateway: the host's connector and sessions over its HTTP API.
import type {
  McpCallOptions,
  McpConnector,
  McpScopeKey,
  McpSession,
  McpToolInfo,
} from '../backend/mcp-connector.js';
import { WsError } from '../contracts/errors.js';
import type { McpServerSpec } from '../contracts/mcp.js';
import type { ToolResult } from '../contracts/tool.js';
import { type GatewayClient, isConnectionFailure } from './client.js';
import type { GatewayLink } from './link.js';

/** MCP servers run inside the sandbox, held by the gateway; the host keeps scoping and eviction. */
export class GatewayMcpConnector implements McpConnector {
  /** Connects through `link`'s gateway (started on the first connection). */
  constructor(private readonly link: GatewayLink) {}

  async connect(
    spec: McpServerSpec,
    scope: McpScopeKey,
    options: { signal?: AbortSignal } = {},
  ): Promise<McpSession> {
    const client = await this.link.start(options);
    const generation = this.link.currentGeneration;
    const answer = await this.call(() =>
      client.json<{ id: string; tools: McpToolInfo[] }>(
        'POST',
        '/mcp/sessions',
        { spec, ...scope },
        { signal: options.signal },
      ),
    );
    return new GatewayMcpSession(this, client, answer.id, answer.tools, generation, spec.name);
  }

  /**
   * Runs a gateway request; a connection failure is diagnosed (and reported with the log tail and
   * whether the request may have run).
   */
  async call<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (isConnectionFailure(error)) throw await this.link.diagnose(error, error.reached);
      throw error;
    }
  }

  /** Whether the gateway launch numbered `generation` still runs (a session of an older one is gone). */
  isCurrent(generation: number): boolean {
    return this.link.currentGeneration === generation && this.link.client !== undefined;
  }
}

class GatewayMcpSession implements McpSession {
  private closed = false;

  constructor(
    private readonly connector: GatewayMcpConnector,
    private readonly client: GatewayClient,
    private readonly id: string,
    private tools: McpToolInfo[] | undefined,
    private readonly generation: number,
    private readonly name: string,
  ) {}

  private assertCurrent(): void {
    if (this.closed || !this.connector.isCurrent(this.generation)) {
      throw new WsError(
        'BACKEND_UNAVAILABLE',
        `The connection to MCP server ${this.name} was lost with the gateway; it reconnects on the next use`,
      );
    }
  }

  async listTools(options: { signal?: AbortSignal } = {}): Promise<McpToolInfo[]> {
    this.assertCurrent();
    if (this.tools) return this.tools;
    const answer = await this.connector.call(() =>
      this.client.json<{ tools: McpToolInfo[] }>(
        'GET',
        `/mcp/sessions/${encodeURIComponent(this.id)}/tools`,
        undefined,
        { signal: options.signal },
      ),
    );
    this.tools = answer.tools;
    return answer.tools;
  }

  async callTool(
    name: string,
    input: Record<string, unknown>,
    options: McpCallOptions = {},
  ): Promise<ToolResult> {
    this.assertCurrent();
    return this.connector.call(() =>
      this.client.json<ToolResult>(
        'POST',
        `/mcp/sessions/${encodeURIComponent(this.id)}/call`,
        { name, input, ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}) },
        { signal: options.signal },
      ),
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (!this.connector.isCurrent(this.generation)) return;
    await this.client.json('DELETE', `/mcp/sessions/${encodeURIComponent(this.id)}`).catch(() => {});
  }
}
