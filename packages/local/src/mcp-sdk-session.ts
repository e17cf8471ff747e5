import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { type McpServerSpec, type ToolResult, WsError } from '@ws/core';
import {
  abortError,
  type McpCallOptions,
  type McpSession,
  type McpToolInfo,
  throwIfAborted,
  toolResultFromMcp,
} from '@ws/core/backend';

import { type HostMcpConnectorOptions, usesSseTransport } from './mcp-host-connector.js';

// setTimeout's ceiling: what "no time limit" means for the SDK, which always arms a timer.
const NO_TIMEOUT_MS = 2_147_483_647;
const DEFAULT_HTTP_TIMEOUT_MS = 30_000;
const STDIO_CONNECT_TIMEOUT_MS = 60_000;
const STDERR_TAIL_BYTES = 4_096;

/** Connects one MCP client with the SDK and lists its tools once (so a broken server fails here). */
export async function connectSdkSession(
  spec: McpServerSpec,
  defaults: HostMcpConnectorOptions,
  options: { signal?: AbortSignal },
): Promise<McpSession> {
  throwIfAborted(options.signal);
  const stderr: string[] = [];
  let stderrBytes = 0;
  let transport: Transport;
  let requestTimeoutMs: number;
  const config = spec.transport;
  if (config.type === 'stdio') {
    const stdio = new StdioClientTransport({
      command: config.command,
      args: [...(config.args ?? [])],
      env: { ...getDefaultEnvironment(), ...defaults.env, ...config.env },
      cwd: config.cwd ?? defaults.cwd,
      stderr: 'pipe',
    });
    stdio.stderr?.on('data', (chunk: Buffer) => {
      stderr.push(chunk.toString('utf8'));
      stderrBytes += chunk.length;
      while (stderrBytes > STDERR_TAIL_BYTES && stderr.length > 1)
        stderrBytes -= Buffer.byteLength(stderr.shift() ?? '');
    });
    transport = stdio;
    requestTimeoutMs = STDIO_CONNECT_TIMEOUT_MS;
  } else {
    const url = new URL(config.url);
    const requestInit = config.headers ? { headers: { ...config.headers } } : undefined;
    transport = usesSseTransport(config.url, config.type)
      ? new SSEClientTransport(url, requestInit ? { requestInit } : undefined)
      : new StreamableHTTPClientTransport(url, requestInit ? { requestInit } : undefined);
    requestTimeoutMs = config.timeoutMs ?? DEFAULT_HTTP_TIMEOUT_MS;
  }
  const client = new Client({ name: '@ws/local', version: '0.1.0' }, { capabilities: {} });
  const describeFailure = (error: unknown) => {
    const tail = stderr.join('').trim();
    return `${error instanceof Error ? error.message : String(error)}${tail ? `\nserver stderr:\n${tail}` : ''}`;
  };
  try {
    await client.connect(transport, {
      timeout: requestTimeoutMs,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const session = new SdkMcpSession(spec.name, client, requestTimeoutMs, describeFailure);
    await session.listTools(options);
    return session;
  } catch (error) {
    await client.close().catch(() => {});
    if (options.signal?.aborted) throw abortError(options.signal);
    if (error instanceof WsError) throw error;
    throw new WsError(
      'BACKEND_UNAVAILABLE',
      `Connecting to MCP server ${spec.name} failed: ${describeFailure(error)}`,
      { cause: error },
    );
  }
}

class SdkMcpSession implements McpSession {
  private tools: McpToolInfo[] | undefined;
  private closed = false;
  /** The connection ended on its own (a stdio server that exited, an HTTP session that was closed). */
  private lost = false;

  constructor(
    private readonly name: string,
    private readonly client: Client,
    private readonly requestTimeoutMs: number,
    private readonly describeFailure: (error: unknown) => string,
  ) {
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      this.tools = undefined;
    });
    client.onclose = () => {
      this.lost = true;
    };
  }

  /** Throws before anything is sent when the connection is already gone, so the call can be made on a new one. */
  private assertConnected(what: string): void {
    if (this.closed)
      throw new WsError('BACKEND_UNAVAILABLE', `The connection to MCP server ${this.name} is closed`, {
        details: { mayHaveRun: false },
      });
    if (this.lost)
      throw new WsError(
        'BACKEND_UNAVAILABLE',
        `MCP server ${this.name} is no longer connected (it exited or closed the session); ${what} was not sent: ${this.describeFailure('connection closed')}`,
        { details: { mayHaveRun: false } },
      );
  }

  async listTools(options: { signal?: AbortSignal } = {}): Promise<McpToolInfo[]> {
    if (this.tools) return this.tools;
    this.assertConnected('listing tools');
    const tools: McpToolInfo[] = [];
    let cursor: string | undefined;
    try {
      do {
        const page = await this.client.listTools(cursor ? { cursor } : undefined, {
          timeout: this.requestTimeoutMs,
          ...(options.signal ? { signal: options.signal } : {}),
        });
        tools.push(...(page.tools as McpToolInfo[]));
        cursor = page.nextCursor;
      } while (cursor);
    } catch (error) {
      throw this.wrap(error, 'listing tools', options.signal);
    }
    this.tools = tools;
    return tools;
  }

  async callTool(
    name: string,
    input: Record<string, unknown>,
    options: McpCallOptions = {},
  ): Promise<ToolResult> {
    throwIfAborted(options.signal);
    this.assertConnected(`calling ${name}`);
    try {
      const result = await this.client.callTool({ name, arguments: input }, undefined, {
        timeout: options.timeoutMs ?? NO_TIMEOUT_MS,
        ...(options.signal ? { signal: options.signal } : {}),
      });
      return toolResultFromMcp(result);
    } catch (error) {
      throw this.wrap(error, `calling ${name}`, options.signal, options.timeoutMs);
    }
  }

  private wrap(error: unknown, what: string, signal: AbortSignal | undefined, timeoutMs?: number): WsError {
    if (signal?.aborted) return abortError(signal);
    if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
      return new WsError(
        'TIMEOUT',
        `MCP server ${this.name} did not answer ${what} within ${timeoutMs ?? this.requestTimeoutMs} ms`,
        { cause: error },
      );
    }
    if ((error instanceof McpError && error.code === ErrorCode.ConnectionClosed) || this.lost) {
      return new WsError(
        'BACKEND_UNAVAILABLE',
        `MCP server ${this.name} closed the connection while ${what}; it may have run: ${this.describeFailure(error)}`,
        { cause: error, details: { mayHaveRun: true } },
      );
    }
    return new WsError(
      'BACKEND_ERROR',
      `MCP server ${this.name} failed ${what}: ${this.describeFailure(error)}`,
      { cause: error },
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.client.close().catch(() => {});
  }
}
