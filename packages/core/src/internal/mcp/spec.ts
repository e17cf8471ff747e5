import { WsError } from '../../contracts/errors.js';
import type { McpServerSpec } from '../../contracts/mcp.js';

/** MCP server names: letters, digits, `_` and `-`. */
export const MCP_NAME_PATTERN = /^[a-zA-Z0-9_-]+$/;

/** A spec with every field filled in (defaults applied), as the registry keeps it. */
export type NormalizedMcpSpec = McpServerSpec & { readonly stateful: boolean };

const invalid = (message: string, spec: unknown): WsError =>
  new WsError('INVALID_ARGUMENT', `Invalid MCP server spec: ${message}`, { details: { spec } });

const isRecordOfStrings = (value: unknown): value is Record<string, string> =>
  typeof value === 'object' &&
  value !== null &&
  !Array.isArray(value) &&
  Object.values(value).every((item) => typeof item === 'string');

const isListOfStrings = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((item) => typeof item === 'string');

/**
 * Checks a spec and fills in its defaults (`stateful`: true for stdio, false for HTTP).
 * @throws WsError `INVALID_ARGUMENT` naming the first problem.
 */
export function normalizeMcpSpec(spec: McpServerSpec): NormalizedMcpSpec {
  if (typeof spec !== 'object' || spec === null) throw invalid('it must be an object', spec);
  if (typeof spec.name !== 'string' || !MCP_NAME_PATTERN.test(spec.name)) {
    throw invalid(`the name ${JSON.stringify(spec.name)} must match ${MCP_NAME_PATTERN}`, spec);
  }
  const transport = spec.transport;
  if (typeof transport !== 'object' || transport === null) throw invalid('a transport is required', spec);
  if (transport.type === 'stdio') {
    if (typeof transport.command !== 'string' || transport.command === '')
      throw invalid('a stdio server needs a command', spec);
    if (transport.args !== undefined && !isListOfStrings(transport.args))
      throw invalid('args must be a list of strings', spec);
    if (transport.env !== undefined && !isRecordOfStrings(transport.env))
      throw invalid('env must map names to strings', spec);
    if (transport.cwd !== undefined && typeof transport.cwd !== 'string')
      throw invalid('cwd must be a string', spec);
    if (spec.stateful === false) throw invalid('a stdio server is always stateful', spec);
  } else if (transport.type === 'http' || transport.type === 'sse' || transport.type === 'streamable-http') {
    let url: URL;
    try {
      url = new URL(transport.url);
    } catch {
      throw invalid(`the URL ${JSON.stringify(transport.url)} is not valid`, spec);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw invalid('the URL must be http or https', spec);
    if (transport.headers !== undefined && !isRecordOfStrings(transport.headers))
      throw invalid('headers must map names to strings', spec);
    if (
      transport.timeoutMs !== undefined &&
      !(typeof transport.timeoutMs === 'number' && transport.timeoutMs > 0)
    ) {
      throw invalid('timeoutMs must be a positive number', spec);
    }
  } else {
    throw invalid(`unknown transport type ${JSON.stringify((transport as { type?: unknown }).type)}`, spec);
  }
  for (const field of ['enableTools', 'disableTools'] as const) {
    const value = spec[field];
    if (value !== undefined && value !== null && !isListOfStrings(value))
      throw invalid(`${field} must be a list of tool names`, spec);
  }
  const overlap = (spec.enableTools ?? []).filter((name) => (spec.disableTools ?? []).includes(name));
  if (overlap.length > 0) throw invalid(`enableTools and disableTools both name ${overlap.join(', ')}`, spec);
  const timeout = spec.executionTimeoutMs;
  if (timeout !== undefined && timeout !== null && !(typeof timeout === 'number' && timeout > 0)) {
    throw invalid('executionTimeoutMs must be a positive number of milliseconds', spec);
  }
  return { ...spec, stateful: spec.stateful ?? transport.type === 'stdio' };
}

/**
 * The protocol an HTTP server is spoken to with: `sse` or `streamable-http` as named, and for `http`
 * AgentScope's rule, SSE when the URL's path ends in `/sse` or `/messages/` (a trailing slash or
 * none), streamable HTTP otherwise.
 */
export function mcpHttpProtocol(transport: {
  readonly type: 'http' | 'sse' | 'streamable-http';
  readonly url: string;
}): 'sse' | 'streamable-http' {
  if (transport.type !== 'http') return transport.type;
  const path = new URL(transport.url).pathname.replace(/\/+$/, '');
  return path.endsWith('/sse') || path.endsWith('/messages') ? 'sse' : 'streamable-http';
}

/** True when the tool passes the spec's enable/disable filters. */
export function toolAllowed(spec: McpServerSpec, tool: string): boolean {
  if (spec.enableTools && !spec.enableTools.includes(tool)) return false;
  return !spec.disableTools?.includes(tool);
}

/** Deep copy through JSON: what the registry hands out, so no caller shares its objects. */
export function copySpec<T extends McpServerSpec>(spec: T): T {
  return JSON.parse(JSON.stringify(spec)) as T;
}

// --- the `.mcp` file: AgentScope's v2 format, so a workdir opens in either ---

type StoredSpec = {
  name: string;
  is_stateful: boolean;
  mcp_config:
    | {
        type: 'stdio_mcp';
        command: string;
        args: string[];
        env: Record<string, string> | null;
        cwd: string | null;
        encoding_error_handler: string;
      }
    | {
        type: 'http_mcp';
        url: string;
        headers: Record<string, string> | null;
        timeout: number;
        /** Only when the protocol was named and the URL alone would choose the other one. */
        transport?: 'sse' | 'streamable_http';
      };
  enable_tools: string[] | null;
  disable_tools: string[] | null;
  execution_timeout: number | null;
};

/** The version of the `.mcp` format written. */
export const MCP_FILE_VERSION = 2;

/** A spec in the `.mcp` file's form (snake_case, seconds). */
export function toStoredSpec(spec: NormalizedMcpSpec): StoredSpec {
  const transport = spec.transport;
  return {
    name: spec.name,
    is_stateful: spec.stateful,
    mcp_config:
      transport.type === 'stdio'
        ? {
            type: 'stdio_mcp',
            command: transport.command,
            args: [...(transport.args ?? [])],
            env: transport.env ? { ...transport.env } : null,
            cwd: transport.cwd ?? null,
            encoding_error_handler: 'strict',
          }
        : {
            type: 'http_mcp',
            url: transport.url,
            headers: transport.headers ? { ...transport.headers } : null,
            timeout: (transport.timeoutMs ?? 30_000) / 1000,
            ...(transport.type !== 'http' &&
            mcpHttpProtocol(transport) !== mcpHttpProtocol({ type: 'http', url: transport.url })
              ? { transport: transport.type === 'sse' ? ('sse' as const) : ('streamable_http' as const) }
              : {}),
          },
    enable_tools: spec.enableTools ? [...spec.enableTools] : null,
    disable_tools: spec.disableTools ? [...spec.disableTools] : null,
    execution_timeout: spec.executionTimeoutMs ? spec.executionTimeoutMs / 1000 : null,
  };
}

/** A spec read back from the `.mcp` file; throws `INVALID_ARGUMENT` for an entry that does not validate. */
export function fromStoredSpec(value: unknown): NormalizedMcpSpec {
  if (typeof value !== 'object' || value === null) throw invalid('a stored entry must be an object', value);
  const stored = value as Omit<Partial<StoredSpec>, 'mcp_config'> & { mcp_config?: Record<string, unknown> };
  const config = stored.mcp_config;
  if (typeof config !== 'object' || config === null) throw invalid('a stored entry needs mcp_config', value);
  const seconds = (input: unknown) =>
    typeof input === 'number' && input > 0 ? Math.round(input * 1000) : undefined;
  let transport: McpServerSpec['transport'];
  if (config.type === 'stdio_mcp') {
    transport = {
      type: 'stdio',
      command: config.command as string,
      ...(config.args ? { args: config.args as string[] } : {}),
      ...(config.env ? { env: config.env as Record<string, string> } : {}),
      ...(config.cwd ? { cwd: config.cwd as string } : {}),
    };
  } else if (config.type === 'http_mcp') {
    const timeoutMs = seconds(config.timeout);
    transport = {
      type:
        config.transport === 'sse'
          ? 'sse'
          : config.transport === 'streamable_http'
            ? 'streamable-http'
            : 'http',
      url: config.url as string,
      ...(config.headers ? { headers: config.headers as Record<string, string> } : {}),
      ...(timeoutMs ? { timeoutMs } : {}),
    };
  } else {
    throw invalid(`unknown stored transport ${JSON.stringify(config.type)}`, value);
  }
  const executionTimeoutMs = seconds(stored.execution_timeout);
  return normalizeMcpSpec({
    name: stored.name as string,
    transport,
    ...(typeof stored.is_stateful === 'boolean' ? { stateful: stored.is_stateful } : {}),
    ...(stored.enable_tools ? { enableTools: stored.enable_tools } : {}),
    ...(stored.disable_tools ? { disableTools: stored.disable_tools } : {}),
    ...(executionTimeoutMs ? { executionTimeoutMs } : {}),
  });
}
