import type { ConnectionConfig } from '@alibaba-group/opensandbox';
import type { CommonWorkspaceOptions, SandboxPolicyOptions } from '@ws/core';
import { WsError } from '@ws/core';
import {
  checkUserLabels,
  type OptionKeys,
  POLICY_KEYS,
  splitOptions,
  WorkspaceEngine,
  type WorkspaceRequester,
} from '@ws/core/backend';
import {
  DEFAULT_OPENSANDBOX_IMAGE,
  DEFAULT_OPENSANDBOX_TIMEOUT_MS,
  OpenSandboxProvider,
} from './opensandbox-provider.js';
import { resolveSandboxPolicy } from './sandbox-policy.js';

/**
 * Options of {@link OpenSandboxWorkspace}. The sandbox policy: `limits.cpus` and `memoryMiB` are the
 * sandbox's `cpu` and `memory` resource limits (`pids` and `diskMiB` are refused: the server has no
 * such limit per sandbox); `network: 'none'` or an allow list (addresses, CIDR blocks, host names)
 * is the sandbox's egress policy, denying everything else, which the server enforces with its egress
 * sidecar; `privileges` is refused (capabilities are the server's setting, not a sandbox's).
 */
export interface OpenSandboxWorkspaceOptions extends CommonWorkspaceOptions, SandboxPolicyOptions {
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
  /**
   * Resource limits of a sandbox this workspace creates (`{ cpu: '1', memory: '2Gi' }`); the `limits`
   * option adds to these (one limit given in both is refused). Default: the SDK's (`cpu` 1, `memory` 2Gi).
   */
  resources?: Readonly<Record<string, string>>;
  /** The sandbox's main process. Default: the SDK's (`tail -f /dev/null`). */
  entrypoint?: readonly string[];
  /**
   * A connection of your own (the SDK's `ConnectionConfig`: used as given, never closed); the
   * options above that configure one (`apiKey`, `domain`, `protocol`, `requestTimeoutMs`) are then
   * ignored.
   */
  client?: ConnectionConfig;
  /** Owner tag put in the sandbox's metadata (`ws.owner`), for reaping. Default: `ws`. */
  owner?: string;
  /** Start the gateway when the image has node 18 or newer. Default: true. */
  gateway?: boolean;
  /**
   * Who the sandbox is opened for, put in its metadata as `ws.user`, `ws.agent` and `ws.session`
   * (`ws ls` shows them), each one the server can store (a Kubernetes label value: up to 63 of
   * `[A-Za-z0-9-_.]`; another is left out). A `WorkspaceManager` with {@link openSandboxWorkspaces}
   * passes its request's.
   */
  requester?: WorkspaceRequester;
}

const OPENSANDBOX_KEYS: OptionKeys<OpenSandboxWorkspaceOptions> = {
  image: true,
  apiKey: true,
  domain: true,
  protocol: true,
  timeoutMs: true,
  requestTimeoutMs: true,
  metadata: true,
  env: true,
  resources: true,
  entrypoint: true,
  client: true,
  owner: true,
  gateway: true,
  requester: true,
  ...POLICY_KEYS,
};

/**
 * Why `user` is refused: execd takes a uid per command, but its file API is not held to hand what it
 * writes to that uid here (the emulator's sandboxes cannot change owners), so files would be root's.
 */
const USER_HINT = {
  user: "OpenSandbox runs commands as the image's user; build the image with USER <name> (or USER uid:gid)",
};

function invalid(message: string, details: Record<string, unknown>): WsError {
  return new WsError('INVALID_ARGUMENT', message, { details });
}

/**
 * A workspace in an OpenSandbox sandbox, through the official `@alibaba-group/opensandbox` SDK. The
 * sandbox carries the workspace id in its metadata (`ws.workspace.id`) and is found by it again,
 * resumed when paused; `close()` pauses it (files kept), `destroy()` kills it. Tool calls and MCP go
 * through the in-sandbox gateway, reached over one long-lived command's streams.
 */
export class OpenSandboxWorkspace extends WorkspaceEngine<OpenSandboxProvider> {
  /**
   * Checks the options and does no I/O: the workspace starts at `initialize()` (or `open()`).
   * @throws WsError `INVALID_ARGUMENT` for an unknown option (`user`: commands run as the image's
   *   user), a bad time limit, a `ws.` metadata key or an unsafe workspace id;
   *   `CAPABILITY_UNSUPPORTED` for `limits.pids`, `limits.diskMiB` or `privileges`.
   */
  constructor(options: OpenSandboxWorkspaceOptions = {}) {
    const { common, own } = splitOptions('OpenSandboxWorkspace', options, OPENSANDBOX_KEYS, USER_HINT);
    const timeoutMs = own.timeoutMs === undefined ? DEFAULT_OPENSANDBOX_TIMEOUT_MS : own.timeoutMs;
    if (timeoutMs !== null && (!Number.isInteger(timeoutMs) || timeoutMs < 10_000))
      throw invalid(`timeoutMs must be null or a whole number of at least 10 000, not ${timeoutMs}`, {
        timeoutMs,
      });
    const { requestTimeoutMs, protocol } = own;
    if (requestTimeoutMs !== undefined && (!Number.isFinite(requestTimeoutMs) || requestTimeoutMs <= 0))
      throw invalid(`requestTimeoutMs must be a positive number, not ${requestTimeoutMs}`, {
        requestTimeoutMs,
      });
    if (protocol !== undefined && protocol !== 'http' && protocol !== 'https')
      throw invalid(`protocol must be "http" or "https", not ${String(protocol)}`, { protocol });
    checkUserLabels(own.metadata, 'Metadata');
    const { limits, network, privileges, ...rest } = own;
    const policy = resolveSandboxPolicy('OpenSandboxWorkspace', {
      limits,
      network,
      privileges,
      resources: own.resources,
    });
    super({
      ...common,
      provider: new OpenSandboxProvider({
        ...rest,
        policy,
        image: own.image ?? DEFAULT_OPENSANDBOX_IMAGE,
        timeoutMs,
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
