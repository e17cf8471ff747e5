import type { WsErrorCode } from '../contracts/errors.js';

/**
 * The gateway's HTTP API (inside the sandbox, on a unix socket or a loopback port). Everything but
 * `GET /health` needs `Authorization: Bearer <token>`. Errors answer with a status ≥ 400 and a
 * {@link GatewayErrorBody}.
 *
 * - `GET  /health` → {@link GatewayHealth}
 * - `POST /exec` → body: one JSON line ({@link GatewayExecRequest}), then raw stdin bytes when
 *   `stdin: 'stream'`; answer: NDJSON {@link GatewayExecFrame}s, the last one of type `x`.
 * - `GET  /files?path=` → the bytes; `PUT /files?path=&mode=` ← the bytes (parents created).
 * - `POST /files/op` ← {@link GatewayFileOp} → its result as JSON.
 * - `POST /mcp/sessions` ← {@link GatewayMcpConnect} → `{ id, tools }`;
 *   `GET /mcp/sessions?agentId=&sessionId=` → the sessions of a scope;
 *   `GET /mcp/sessions/:id/tools` → `{ tools }`;
 *   `POST /mcp/sessions/:id/call` ← {@link GatewayMcpCall} → a `ToolResult`;
 *   `DELETE /mcp/sessions/:id`.
 */

/** Bumped when the API changes incompatibly; the host refuses a gateway of another version. */
export const GATEWAY_PROTOCOL_VERSION = 1;

/** The answer of `GET /health` (without the token): which launch answers, speaking which protocol. */
export interface GatewayHealth {
  /** Always `ok`: a gateway that answers is up. */
  readonly status: 'ok';
  /** The launch's nonce, so the host tells this launch from an older one. */
  readonly nonce: string;
  /** The gateway's {@link GATEWAY_PROTOCOL_VERSION}. */
  readonly protocol: number;
  /** The gateway's process id inside the sandbox. */
  readonly pid: number;
  /** The node version it runs on. */
  readonly node: string;
}

/** The body of every failed gateway request: the WsError's code, message and details. */
export interface GatewayErrorBody {
  /** The failure, as a WsError would carry it. */
  readonly error: {
    readonly code: WsErrorCode;
    readonly message: string;
    readonly details?: Record<string, unknown>;
  };
}

/** The JSON line that opens `POST /exec`: the command and how it runs. */
export interface GatewayExecRequest {
  /** The program and its arguments (no shell). */
  readonly argv: readonly string[];
  /** Its working directory. Default: the gateway's workdir. */
  readonly cwd?: string;
  /** Variables added to its environment. */
  readonly env?: Record<string, string>;
  /** `'stream'`: stdin follows the JSON line as raw bytes; a string: base64 stdin; absent: none. */
  readonly stdin?: 'stream' | string;
  /** Stops it after this many ms (the exit frame says `timedOut`). */
  readonly timeoutMs?: number;
  /**
   * When set, the gateway sends at most this many bytes of each stream and drops the rest (counting
   * it), so a command's huge output does not cross the channel when only its head is kept; the exit
   * frame then says `truncated`. Absent: every byte is sent (the host streams it to a listener).
   */
  readonly maxOutputBytes?: number;
}

/** `o`/`e`: stdout/stderr bytes (base64); `x`: the exit; `f`: a failure before or while running. */
export type GatewayExecFrame =
  | { readonly t: 'o' | 'e'; readonly d: string }
  | {
      readonly t: 'x';
      readonly exitCode: number;
      readonly signal?: string;
      readonly timedOut: boolean;
      /** Output past the request's `maxOutputBytes` was dropped. */
      readonly truncated?: boolean;
    }
  | { readonly t: 'f'; readonly error: GatewayErrorBody['error'] };

/** The body of `POST /files/op`: one file operation on a path inside the sandbox. */
export type GatewayFileOp =
  | { readonly op: 'stat'; readonly path: string }
  | { readonly op: 'list'; readonly path: string }
  | { readonly op: 'remove'; readonly path: string; readonly recursive?: boolean; readonly force?: boolean }
  | { readonly op: 'mkdir'; readonly path: string; readonly recursive?: boolean }
  | { readonly op: 'rename'; readonly path: string; readonly to: string };

/** The body of `POST /mcp/sessions`: the server to start and the (agent, session) scope it serves. */
export interface GatewayMcpConnect {
  /** The MCP server's declaration, as the workspace normalised it. */
  readonly spec: unknown;
  /** The agent the connection serves. */
  readonly agentId: string;
  /** The agent's session the connection serves. */
  readonly sessionId: string;
}

/** The body of `POST /mcp/sessions/<id>/call`: one tool call. */
export interface GatewayMcpCall {
  /** The tool's name on its server. */
  readonly name: string;
  /** The tool's input. */
  readonly input: Record<string, unknown>;
  /** This call's time limit in ms. Default: none. */
  readonly timeoutMs?: number;
}

/**
 * The HTTP upgrade a host asks of a gateway listening on a port, to carry {@link MuxEndpoint} frames
 * over one raw connection (`GET /mux`, `Connection: Upgrade`, `Upgrade: ws-gateway-mux`, the bearer
 * token). Used where the port is reached through a vendor's HTTP reverse proxy, which passes an
 * upgraded connection through as bytes.
 */
export const GATEWAY_MUX_UPGRADE = 'ws-gateway-mux';
/** The path of the {@link GATEWAY_MUX_UPGRADE} request. */
export const GATEWAY_MUX_PATH = '/mux';
