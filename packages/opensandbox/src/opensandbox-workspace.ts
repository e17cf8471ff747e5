import type { ConnectionConfig } from '@alibaba-group/opensandbox';
import type { CommonWorkspaceOptions } from '@ws/core';
import { WsError } from '@ws/core';
import { checkOptionKeys, checkUserLabels, engineOptions, WorkspaceEngine } from '@ws/core/backend';
import {
  DEFAULT_OPENSANDBOX_IMAGE,
  DEFAULT_OPENSANDBOX_TIMEOUT_MS,
  OpenSandboxProvider,
} from './opensandbox-provider.js';

/** Options of {@link OpenSandboxWorkspace}. */
export interface OpenSandboxWorkspaceOptions extends CommonWorkspaceOptions {
  /** The image of a sandbox this workspace creates. Default: `python:3.11-slim` (AgentScope's). */
  image?: string;
  /** The OpenSandbox API key. Default: `OPEN_SANDBOX_API_KEY` from the environment. */
  apiKey?: string;
  /**
   * The OpenSandbox server: `host:port` or a URL. Default: `OPEN_SANDBOX_DOMAIN`, else
   * `localhost:8080`.
   */
  domain?: string;
  /** The protocol of a `domain` given without one. Default: `http`. */
  protocol?: 'http' | 'https';
  /**
   * The sandbox's time limit in milliseconds (the server removes it once it passes). While the
   * workspace is open it is pushed back every third of it; `null` for none (the sandbox stays until
   * `destroy()`). Default: 300 000 (five minutes).
   */
  timeoutMs?: number | null;
  /** Time limit of each request to OpenSandbox until its answer starts, in milliseconds. Default: the SDK's (30 000). */
  requestTimeoutMs?: number;
  /** Metadata put on a sandbox this workspace creates (besides its own `ws.*` keys). */
  metadata?: Readonly<Record<string, string>>;
  /** Variables for the sandbox and every command. */
  env?: Readonly<Record<string, string>>;
  /** Resource limits of a sandbox this workspace creates (`{ cpu: '1', memory: '2Gi' }`). Default: the server's. */
  resources?: Readonly<Record<string, string>>;
  /** The sandbox's main process. Default: the SDK's (`tail -f /dev/null`). */
  entrypoint?: readonly string[];
  /** A connection of your own (it is used as given, and never closed); the options above that configure one are then ignored. */
  connectionConfig?: ConnectionConfig;
  /** Owner tag put in the sandbox's metadata (`ws.owner`), for reaping. Default: `ws`. */
  owner?: string;
  /** Start the gateway when the image has node 18 or newer. Default: true. */
  gateway?: boolean;
}

const OPENSANDBOX_KEYS = [
  'image',
  'apiKey',
  'domain',
  'protocol',
  'timeoutMs',
  'requestTimeoutMs',
  'metadata',
  'env',
  'resources',
  'entrypoint',
  'connectionConfig',
  'owner',
  'gateway',
] as const satisfies readonly (keyof OpenSandboxWorkspaceOptions)[];

/**
 * A workspace in an OpenSandbox sandbox, through the official `@alibaba-group/opensandbox` SDK. The
 * sandbox carries the workspace id in its metadata (`ws.workspace.id`) and is found by it again,
 * resumed when paused; `close()` pauses it (files kept), `destroy()` kills it. Tool calls and MCP go
 * through the in-sandbox gateway, reached over one long-lived command's streams.
 */
export class OpenSandboxWorkspace extends WorkspaceEngine<OpenSandboxProvider> {
  /**
   * Checks the options and does no I/O: the workspace starts at `initialize()` (or `open()`).
   * @throws WsError `INVALID_ARGUMENT` for an unknown option, a bad time limit, a `ws.` metadata key or an unsafe workspace id.
   */
  constructor(options: OpenSandboxWorkspaceOptions = {}) {
    checkOptionKeys('OpenSandboxWorkspace', options, OPENSANDBOX_KEYS);
    const timeoutMs = options.timeoutMs === undefined ? DEFAULT_OPENSANDBOX_TIMEOUT_MS : options.timeoutMs;
    if (timeoutMs !== null && (!Number.isInteger(timeoutMs) || timeoutMs < 10_000))
      throw new WsError(
        'INVALID_ARGUMENT',
        `timeoutMs must be null or a whole number of at least 10 000, not ${timeoutMs}`,
        { details: { timeoutMs } },
      );
    const { requestTimeoutMs } = options;
    if (requestTimeoutMs !== undefined && (!Number.isFinite(requestTimeoutMs) || requestTimeoutMs <= 0))
      throw new WsError(
        'INVALID_ARGUMENT',
        `requestTimeoutMs must be a positive number, not ${requestTimeoutMs}`,
        {
          details: { requestTimeoutMs },
        },
      );
    if (options.protocol !== undefined && options.protocol !== 'http' && options.protocol !== 'https')
      throw new WsError(
        'INVALID_ARGUMENT',
        `protocol must be "http" or "https", not ${String(options.protocol)}`,
      );
    checkUserLabels(options.metadata, 'Metadata');
    super({
      ...engineOptions(options),
      provider: new OpenSandboxProvider({
        image: options.image ?? DEFAULT_OPENSANDBOX_IMAGE,
        apiKey: options.apiKey,
        domain: options.domain,
        protocol: options.protocol,
        timeoutMs,
        requestTimeoutMs,
        metadata: options.metadata,
        env: options.env,
        resources: options.resources,
        entrypoint: options.entrypoint,
        connectionConfig: options.connectionConfig,
        owner: options.owner,
        gateway: options.gateway,
      }),
    });
  }

  /** The id of the OpenSandbox sandbox this workspace is attached to, once initialized. */
  get sandboxId(): string | undefined {
    return this.provider.sandboxId;
  }

  /** Milliseconds the last initialize took to find, resume or create the sandbox. */
  get attachMs(): number | undefined {
    return this.provider.attachMs;
  }

  /** Milliseconds the gateway took to start and answer, once it did. */
  get gatewayStartMs(): number | undefined {
    return this.provider.gatewayStartMs;
  }
}
