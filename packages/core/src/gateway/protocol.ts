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
    /** The WsError's code. */
    readonly code: WsErrorCode;
    /** The WsError's message. */
    readonly message: string;
    /** The WsError's details, when it has any. */
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
  | {
      /** The stream: `o` for stdout, `e` for stderr. */
      readonly t: 'o' | 'e';
      /** A chunk of its bytes, base64-encoded. */
      readonly d: string;
    }
  | {
      /** The exit frame, the last one. */
      readonly t: 'x';
      /** The command's exit code (`-1` after a timeout, `128 + n` when signal `n` killed it). */
      readonly exitCode: number;
      /** The signal that ended the command, when one did (`"SIGKILL"`). */
      readonly signal?: string;
      /** The command was killed because the request's `timeoutMs` passed. */
      readonly timedOut: boolean;
      /** Output past the request's `maxOutputBytes` was dropped. */
      readonly truncated?: boolean;
    }
  | {
      /** A failure before or while the command ran; no exit frame follows. */
      readonly t: 'f';
      /** The failure, as a WsError would carry it. */
      readonly error: GatewayErrorBody['error'];
    };

/** The body of `POST /files/op`: one file operation on a path inside the sandbox. */
export type GatewayFileOp =
  | {
      /** Describes the path. */
      readonly op: 'stat';
      /** The path to describe. */
      readonly path: string;
    }
  | {
      /** Lists a directory's entries. */
      readonly op: 'list';
      /** The directory to list. */
      readonly path: string;
    }
  | {
      /** Removes a file or directory. */
      readonly op: 'remove';
      /** The path to remove. */
      readonly path: string;
      /** Remove a directory and everything below it. Default: false, a directory is refused. */
      readonly recursive?: boolean;
      /** A missing path is not an error. Default: false. */
      readonly force?: boolean;
    }
  | {
      /** Creates a directory. */
      readonly op: 'mkdir';
      /** The directory to create. */
      readonly path: string;
      /** Create missing parents, and accept an existing directory. Default: false. */
      readonly recursive?: boolean;
    }
  | {
      /** Moves a file or directory. */
      readonly op: 'rename';
      /** The path to move. */
      readonly path: string;
      /** Where it goes. */
      readonly to: string;
    };

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
