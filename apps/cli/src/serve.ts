import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  type Tool as McpTool,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { generateId, isWsError, type Tool, type ToolResult, type Workspace } from '@ws/core';
import { UsageError } from './cli-args.js';

/** How often a long tool call reports progress to a client that asked for it (tests shorten it). */
const PROGRESS_INTERVAL_MS = Number(process.env.WS_PROGRESS_INTERVAL_MS) || 5_000;

/**
 * The tools a served workspace offers: its built-ins, listed once, and its MCP servers' tools
 * (`mcp__<server>__<tool>`), listed again on every `tools/list` so that servers that came up or
 * changed are seen.
 */
export class ToolCatalog {
  private builtins: Promise<Tool[]> | undefined;
  private byName = new Map<string, Tool>();

  constructor(private readonly workspace: Workspace) {}

  async list(signal?: AbortSignal): Promise<Tool[]> {
    this.builtins ??= this.workspace.listTools();
    const builtins = await this.builtins;
    const mcpTools: Tool[] = [];
    if (this.workspace.capabilities.mcp) {
      const clients = await this.workspace.listMcps(signal ? { signal } : {});
      const listed = await Promise.allSettled(
        clients.map((client) => client.listTools(signal ? { signal } : {})),
      );
      listed.forEach((outcome, index) => {
        if (outcome.status === 'fulfilled') mcpTools.push(...outcome.value);
        else
          process.stderr.write(
            `ws: MCP server ${clients[index]?.name} did not list its tools: ${describe(outcome.reason)}\n`,
          );
      });
    }
    const tools = [...builtins, ...mcpTools];
    this.byName = new Map(tools.map((tool) => [tool.name, tool]));
    return tools;
  }

  async find(name: string, signal?: AbortSignal): Promise<Tool | undefined> {
    return this.byName.get(name) ?? (await this.list(signal)).find((tool) => tool.name === name);
  }
}

function describe(error: unknown): string {
  if (isWsError(error)) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

function toMcpTool(tool: Tool): McpTool {
  const { readOnlyHint, destructiveHint, idempotentHint, openWorldHint, title } = tool.annotations;
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema as McpTool['inputSchema'],
    annotations: {
      readOnlyHint,
      ...(destructiveHint !== undefined ? { destructiveHint } : {}),
      ...(idempotentHint !== undefined ? { idempotentHint } : {}),
      ...(openWorldHint !== undefined ? { openWorldHint } : {}),
      ...(title !== undefined ? { title } : {}),
    },
  };
}

/** One MCP server (one client connection) over a workspace's tools. */
/** Text results longer than this are offloaded into the workspace; the client gets a preview and the path. */
export const DEFAULT_MAX_RESULT_CHARS = 100_000;
const PREVIEW_CHARS = 2_000;

async function offloadIfLarge(
  workspace: Workspace,
  result: ToolResult,
  sessionId: string,
  maxChars: number,
): Promise<ToolResult> {
  const size = result.content.reduce(
    (total, item) => total + (item.type === 'text' ? item.text.length : 0),
    0,
  );
  if (size <= maxChars) return result;
  const text = result.content.map((item) => (item.type === 'text' ? item.text : '')).join('\n');
  const path = await workspace.offloadToolResult(sessionId, { id: generateId(), output: text });
  return {
    ...result,
    content: [
      {
        type: 'text',
        text: `${text.slice(0, PREVIEW_CHARS)}\n\n[${size} characters in all; the whole result is in ${path}: Read it in parts, or Grep it]`,
      },
    ],
  };
}

export function createMcpServer(
  workspace: Workspace,
  catalog: ToolCatalog,
  version: string,
  maxResultChars = DEFAULT_MAX_RESULT_CHARS,
): Server {
  const server = new Server(
    { name: 'ws', title: `@ws workspace (${workspace.capabilities.backend})`, version },
    {
      capabilities: { tools: { listChanged: false }, resources: {} },
      instructions: workspace.getInstructions(),
    },
  );
  // The skills of the default partition, one resource per SKILL.md.
  const skillUri = (name: string) => `skill://${encodeURIComponent(name)}/SKILL.md`;
  server.setRequestHandler(ListResourcesRequestSchema, async (_request, extra) => ({
    resources: (await workspace.listSkills({ signal: extra.signal })).map((skill) => ({
      uri: skillUri(skill.name),
      name: skill.name,
      description: skill.description,
      mimeType: 'text/markdown',
    })),
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => {
    const { uri } = request.params;
    const skill = (await workspace.listSkills({ signal: extra.signal })).find(
      (item) => skillUri(item.name) === uri,
    );
    if (!skill) throw new McpError(ErrorCode.InvalidParams, `Unknown resource ${JSON.stringify(uri)}`);
    const bytes = await workspace.getSandbox().readFile(`${skill.dir}/SKILL.md`, { signal: extra.signal });
    return { contents: [{ uri, mimeType: 'text/markdown', text: new TextDecoder().decode(bytes) }] };
  });
  server.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => ({
    tools: (await catalog.list(extra.signal)).map(toMcpTool),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const { name, arguments: input = {} } = request.params;
    const tool = await catalog.find(name, extra.signal);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool ${JSON.stringify(name)}`);
    const progressToken = request.params._meta?.progressToken;
    let ticks = 0;
    const timer =
      progressToken === undefined
        ? undefined
        : setInterval(() => {
            ticks += 1;
            extra
              .sendNotification({
                method: 'notifications/progress',
                params: {
                  progressToken,
                  progress: ticks,
                  message: `${name} still running after ${(ticks * PROGRESS_INTERVAL_MS) / 1000}s`,
                },
              })
              .catch(() => {});
          }, PROGRESS_INTERVAL_MS);
    try {
      // The request's signal is aborted by the client's notifications/cancelled: the tool kills its work.
      const result = await offloadIfLarge(
        workspace,
        await tool.call(input, { signal: extra.signal }),
        extra.sessionId ?? 'mcp',
        maxResultChars,
      );
      return {
        content: result.content.map((item) => ({ ...item })) as CallToolResult['content'],
        isError: result.isError,
        ...(result.metadata ? { _meta: { 'ws/metadata': result.metadata } } : {}),
      };
    } catch (error) {
      if (extra.signal.aborted) throw error;
      return { content: [{ type: 'text', text: describe(error) }], isError: true };
    } finally {
      if (timer) clearInterval(timer);
    }
  });
  return server;
}

export interface ServeHandle {
  /** Where an HTTP server listens (`http://127.0.0.1:PORT/mcp`); undefined for stdio. */
  readonly url?: string;
  /** Resolves when the client went away (stdio closed). */
  readonly done: Promise<void>;
  close(): Promise<void>;
}

/** Serves over stdin/stdout; done when stdin ends. */
export async function serveStdio(
  workspace: Workspace,
  catalog: ToolCatalog,
  version: string,
  maxResultChars?: number,
): Promise<ServeHandle> {
  const server = createMcpServer(workspace, catalog, version, maxResultChars);
  const done = new Promise<void>((resolve) => {
    process.stdin.once('end', resolve);
    process.stdin.once('close', resolve);
    server.onclose = () => resolve();
  });
  await server.connect(new StdioServerTransport());
  return { done, close: () => server.close() };
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

export interface HttpServeOptions {
  port: number;
  host: string;
  /** The bearer token every request must carry. */
  token: string;
  /** Most MCP sessions open at once; an initialize past it is answered 503. */
  maxSessions: number;
  /** A session without a request in flight for this long is closed. */
  sessionIdleMs: number;
  maxResultChars?: number | undefined;
}

interface HttpSession {
  readonly transport: StreamableHTTPServerTransport;
  /** Requests of this session being answered (an open event stream counts until it ends). */
  inFlight: number;
  lastUsed: number;
}

/**
 * Serves streamable HTTP at `/mcp`, one MCP session (and one Server) per client. Every request needs
 * the bearer token, and one sent by a web page (an `Origin` header) must come from this server's own
 * origin; sessions are capped and closed once idle.
 */
export async function serveHttp(
  workspace: Workspace,
  catalog: ToolCatalog,
  version: string,
  options: HttpServeOptions,
): Promise<ServeHandle> {
  const sessions = new Map<string, HttpSession>();
  let opening = 0;
  const expected = Buffer.from(`Bearer ${options.token}`);
  /** On loopback: the Host headers (and origins) a request may carry; elsewhere any. */
  let allowedHosts: string[] | undefined;
  let allowedOrigins: Set<string> | undefined;

  const authorized = (request: IncomingMessage) => {
    const given = Buffer.from(request.headers.authorization ?? '');
    return given.length === expected.length && timingSafeEqual(given, expected);
  };
  const fail = (
    response: ServerResponse,
    status: number,
    message: string,
    headers: Record<string, string> = {},
  ) => {
    response.writeHead(status, { 'content-type': 'application/json', ...headers });
    response.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
  };
  /** Counts a request against its session until its response ends. */
  const use = (session: HttpSession, response: ServerResponse) => {
    session.inFlight += 1;
    session.lastUsed = Date.now();
    response.once('close', () => {
      session.inFlight -= 1;
      session.lastUsed = Date.now();
    });
  };

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const path = new URL(request.url ?? '/', 'http://x').pathname;
    if (path !== '/mcp') return fail(response, 404, 'Not found; the MCP endpoint is /mcp');
    // A page's request names its origin: it must be this server's own (on an address other than
    // loopback, the host the request was sent to).
    const origin = request.headers.origin;
    const ownOrigin = allowedOrigins
      ? allowedOrigins.has(origin ?? '')
      : origin === `http://${request.headers.host}`;
    if (origin !== undefined && !ownOrigin)
      return fail(response, 403, `Forbidden: requests from ${origin} are refused`);
    if (!authorized(request)) return fail(response, 401, 'Unauthorized', { 'www-authenticate': 'Bearer' });
    const sessionId = request.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const session = sessions.get(sessionId);
      if (!session) return fail(response, 404, 'Unknown MCP session');
      use(session, response);
      return session.transport.handleRequest(request, response);
    }
    if (request.method !== 'POST') return fail(response, 400, 'No MCP session; initialize with a POST first');
    if (sessions.size + opening >= options.maxSessions)
      return fail(
        response,
        503,
        `Too many MCP sessions open (${options.maxSessions}): close one (DELETE /mcp with its Mcp-Session-Id) or wait until one has been idle for ${Math.round(options.sessionIdleMs / 1000)} s`,
        { 'retry-after': String(Math.max(1, Math.round(options.sessionIdleMs / 1000))) },
      );
    opening += 1;
    try {
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (id) => {
          const session: HttpSession = { transport, inFlight: 0, lastUsed: Date.now() };
          sessions.set(id, session);
          use(session, response);
        },
        onsessionclosed: (id) => {
          sessions.delete(id);
        },
        // A page in a browser must not reach a loopback server through a rebound DNS name.
        ...(allowedHosts ? { enableDnsRebindingProtection: true, allowedHosts } : {}),
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      const server = createMcpServer(workspace, catalog, version, options.maxResultChars);
      await server.connect(transport);
      await transport.handleRequest(request, response);
      if (!transport.sessionId) await server.close(); // not an initialize request: nothing to keep
    } finally {
      opening -= 1;
    }
  };

  // Idle sessions are closed: a client that went away without DELETE keeps nothing for long.
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [id, session] of sessions)
        if (session.inFlight === 0 && now - session.lastUsed >= options.sessionIdleMs) {
          sessions.delete(id);
          void session.transport.close().catch(() => {});
        }
    },
    Math.min(30_000, Math.max(100, options.sessionIdleMs / 4)),
  );
  sweep.unref();

  const http = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) fail(response, 500, describe(error));
      else response.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new UsageError(`cannot listen on ${options.host}:${options.port}: ${error.code ?? error.message}`),
      ),
    );
    http.listen(options.port, options.host, () => resolve());
  });
  const { port } = http.address() as AddressInfo;
  const shown = options.host.includes(':') ? `[${options.host}]` : options.host;
  if (LOOPBACK.has(options.host)) {
    allowedHosts = ['127.0.0.1', 'localhost', '[::1]'].map((host) => `${host}:${port}`);
    allowedOrigins = new Set(allowedHosts.map((host) => `http://${host}`));
  }
  const done = new Promise<void>(() => {});
  return {
    url: `http://${shown}:${port}/mcp`,
    done,
    close: async () => {
      clearInterval(sweep);
      await Promise.allSettled([...sessions.values()].map((session) => session.transport.close()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
