// The MCP client a workspace hands out for one server of one scope, and the tools it makes of the server's.
import type { McpToolInfo } from '../../backend/mcp-connector.js';
import { isWsError, throwIfAborted, WsError } from '../../contracts/errors.js';
import type { McpClient, McpServerSpec } from '../../contracts/mcp.js';
import type { Tool, ToolCallOptions, ToolResult } from '../../contracts/tool.js';
import type { McpRegistry, Scope } from './registry.js';
import { copySpec, type NormalizedMcpSpec, toolAllowed } from './spec.js';

const MCP_TOOL_PREFIX = 'mcp__';

/** A live MCP client of one scope; its tools survive eviction (the connection is reopened on use). */
export class ScopedMcpClient implements McpClient {
  readonly name: string;
  readonly spec: McpServerSpec;

  constructor(
    private readonly registry: McpRegistry,
    private readonly scope: Scope,
    private readonly normalized: NormalizedMcpSpec,
  ) {
    this.name = normalized.name;
    this.spec = copySpec(normalized);
  }

  async listTools(options: { signal?: AbortSignal } = {}): Promise<Tool[]> {
    const infos = await this.registry.withSession(
      this.scope,
      this.normalized,
      (session) => session.listTools(options),
      options.signal,
      true,
    );
    return infos.filter((info) => toolAllowed(this.normalized, info.name)).map((info) => this.toTool(info));
  }

  async callTool(
    name: string,
    input: Record<string, unknown>,
    options: ToolCallOptions = {},
  ): Promise<ToolResult> {
    throwIfAborted(options.signal);
    if (!toolAllowed(this.normalized, name)) {
      throw new WsError(
        'NOT_FOUND',
        `The tool ${JSON.stringify(name)} of MCP server ${this.name} is disabled`,
      );
    }
    const timeoutMs = this.normalized.executionTimeoutMs ?? undefined;
    return this.registry.withSession(
      this.scope,
      this.normalized,
      (session) => session.callTool(name, input ?? {}, { timeoutMs, signal: options.signal }),
      options.signal,
    );
  }

  private toTool(info: McpToolInfo): Tool {
    const schema = { type: 'object', properties: {}, required: [], ...(info.inputSchema ?? {}) };
    const annotations = info.annotations ?? {};
    return {
      name: `${MCP_TOOL_PREFIX}${this.name}__${info.name}`,
      description: info.description ?? info.title ?? info.name,
      inputSchema: schema,
      annotations: {
        readOnlyHint: annotations.readOnlyHint ?? false,
        concurrencySafe: false,
        ...(annotations.destructiveHint !== undefined
          ? { destructiveHint: annotations.destructiveHint }
          : {}),
        ...(annotations.idempotentHint !== undefined ? { idempotentHint: annotations.idempotentHint } : {}),
        ...(annotations.openWorldHint !== undefined ? { openWorldHint: annotations.openWorldHint } : {}),
        ...((annotations.title ?? info.title) ? { title: (annotations.title ?? info.title) as string } : {}),
      },
      call: async (input: Record<string, unknown>, options: ToolCallOptions = {}): Promise<ToolResult> => {
        try {
          return await this.callTool(info.name, input, options);
        } catch (error) {
          if (
            isWsError(error) &&
            (error.code === 'ABORTED' || error.code === 'DISPOSED' || error.code === 'NOT_READY')
          )
            throw error;
          const message = error instanceof Error ? error.message : String(error);
          return {
            content: [{ type: 'text', text: `Error: MCP tool ${this.name}/${info.name} failed: ${message}` }],
            isError: true,
          };
        }
      },
    };
  }
}
