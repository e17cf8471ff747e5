import { randomUUID } from 'node:crypto';
import { WsError } from '@ws/core';
import type { McpConnector, McpSession, McpToolInfo } from '@ws/core/backend';
import { type GatewayMcpConnect, normalizeMcpSpec } from '@ws/core/gateway';
import { loadMcp } from './load-mcp.js';

/** One MCP session the gateway holds, with the scope it was opened for. */
export interface McpSessionEntry {
  /** The connected session. */
  readonly session: McpSession;
  /** The agent it was opened for (`''` when none). */
  readonly agentId: string;
  /** The session of that agent it was opened for (`''` when none). */
  readonly sessionId: string;
  /** The MCP server's name. */
  readonly name: string;
}

/** The MCP sessions a gateway holds, by id, and the connector that opens them. */
export class McpSessions {
  // The MCP client (the SDK, zod, ajv) loads on the first MCP request, so the gateway starts fast.
  private connector: Promise<McpConnector> | undefined;
  private readonly sessions = new Map<string, McpSessionEntry>();

  /** Opens no session and loads no MCP code; servers start in `workdir`. */
  constructor(private readonly workdir: string) {}

  /**
   * Connects to the server of a `POST /mcp/sessions` body and keeps the session under a new id.
   * @throws WsError for an invalid spec; what connecting or listing its tools throws.
   */
  async open(body: GatewayMcpConnect): Promise<{ id: string; tools: McpToolInfo[] }> {
    const spec = normalizeMcpSpec(body.spec as never);
    const session = await (await this.mcpConnector()).connect(spec, {
      agentId: body.agentId ?? '',
      sessionId: body.sessionId ?? '',
    });
    const id = randomUUID();
    this.sessions.set(id, {
      session,
      agentId: body.agentId ?? '',
      sessionId: body.sessionId ?? '',
      name: spec.name,
    });
    return { id, tools: await session.listTools() };
  }

  /** The ids and server names of the sessions opened for one agent's session. */
  list(agentId: string, sessionId: string): { id: string; name: string }[] {
    return [...this.sessions.entries()]
      .filter(([, entry]) => entry.agentId === agentId && entry.sessionId === sessionId)
      .map(([id, entry]) => ({ id, name: entry.name }));
  }

  /**
   * The session of `id`.
   * @throws WsError `NOT_FOUND` when this gateway holds none.
   */
  get(id: string): McpSessionEntry {
    const entry = this.sessions.get(id);
    if (!entry) throw new WsError('NOT_FOUND', `No MCP session ${id} in this gateway`);
    return entry;
  }

  /** Forgets the session of `id` and closes it; resolves once closed. */
  async close(id: string, entry: McpSessionEntry): Promise<void> {
    this.sessions.delete(id);
    await entry.session.close();
  }

  /** Closes every session without waiting, and forgets them. */
  closeAll(): void {
    for (const entry of this.sessions.values()) void entry.session.close();
    this.sessions.clear();
  }

  private mcpConnector(): Promise<McpConnector> {
    this.connector ??= loadMcp().then(({ HostMcpConnector }) => new HostMcpConnector({ cwd: this.workdir }));
    return this.connector;
  }
}
