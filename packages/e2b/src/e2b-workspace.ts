import type { CommonWorkspaceOptions, SandboxPolicyOptions } from '@ws/core';
import { WsError } from '@ws/core';
import {
  checkUserLabels,
  checkWorkspaceUser,
  type OptionKeys,
  POLICY_KEYS,
  splitOptions,
  WorkspaceEngine,
  type WorkspaceRequester,
} from '@ws/core/backend';
import { e2bPolicy } from './e2b-policy.js';
import { DEFAULT_E2B_TIMEOUT_MS, E2BProvider } from './e2b-provider.js';

/** Options of {@link E2BWorkspace}. */
export interface E2BWorkspaceOptions extends CommonWorkspaceOptions, SandboxPolicyOptions {
  /** The sandbox template (its id or name). Default: `base`. */
  template?: string;
  /** The E2B API key. Default: `E2B_API_KEY` from the environment. */
  apiKey?: string;
  /** The control plane's URL. Default: `E2B_API_URL`, else `https://api.<domain>`. */
  apiUrl?: string;
  /** The E2B domain. Default: `E2B_DOMAIN`, else `e2b.app`. */
  domain?: string;
  /** One URL for every sandbox's envd (a self-hosted proxy, the emulator). Default: `E2B_SANDBOX_URL`, else E2B's. */
  sandboxUrl?: string;
  /**
   * The sandbox's time limit in milliseconds. While the workspace is open it is pushed back every
   * third of it; when the host goes away without `close()`, the sandbox pauses once it passes (files
   * kept, billing stopped). Default: 300 000 (five minutes).
   */
  timeoutMs?: number;
  /** Time limit of each request to E2B, in milliseconds. Default: the SDK's (60 000). */
  requestTimeoutMs?: number;
  /** Metadata put on a sandbox this workspace creates (besides its own `ws.*` keys). */
  metadata?: Readonly<Record<string, string>>;
  /** Variables for the sandbox and every command. */
  env?: Readonly<Record<string, string>>;
  /** Owner tag put in the sandbox's metadata (`ws.owner`), for reaping. Default: `ws`. */
  owner?: string;
  /** Start the gateway when the template has node 18 or newer. Default: true. */
  gateway?: boolean;
  /**
   * Who commands, file operations and the gateway run as: envd's `user` on every call (E2B's
   * templates have `user`, their default, and `root`; a custom template may add others, which must be
   * able to write the workdir, /home/user/workspace). A user name only: envd looks accounts up by
   * name, so a numeric id is refused (`INVALID_ARGUMENT`). Default: the template's user.
   */
  user?: string;
  /**
   * Who the sandbox is opened for, put in its metadata as `ws.user`, `ws.agent` and `ws.session`
   * (`ws ls` shows them). A `WorkspaceManager` with {@link e2bWorkspaces} passes its request's.
   */
  requester?: WorkspaceRequester;
}

const E2B_KEYS: OptionKeys<E2BWorkspaceOptions> = {
  template: true,
  apiKey: true,
  apiUrl: true,
  domain: true,
  sandboxUrl: true,
  timeoutMs: true,
  requestTimeoutMs: true,
  metadata: true,
  env: true,
  owner: true,
  gateway: true,
  user: true,
  requester: true,
  ...POLICY_KEYS,
};

/**
 * A workspace in an E2B sandbox, through the official `e2b` SDK. The sandbox carries the workspace id
 * in its metadata (`ws.workspace.id`) and is found by it again, resumed when paused; `close()`
 * pauses it (files kept, nothing billed while paused), `destroy()` kills it. Tool calls and MCP go
 * through the in-sandbox gateway, reached over one long-lived process's stdin and stdout.
 */
export class E2BWorkspace extends WorkspaceEngine<E2BProvider> {
  /**
   * Checks the options and does no I/O: the workspace starts at `initialize()` (or `open()`).
   * @throws WsError `INVALID_ARGUMENT` for an unknown option, a bad time limit, a `ws.` metadata key,
   * a malformed `limits`, `network`, `privileges` or `user` (a numeric `user` too), or an unsafe
   * workspace id; `CAPABILITY_UNSUPPORTED`
   * for a policy E2B cannot enforce (any `limits`, any `privileges`).
   */
  constructor(options: E2BWorkspaceOptions = {}) {
    const { common, own } = splitOptions('E2BWorkspace', options, E2B_KEYS);
    const timeoutMs = own.timeoutMs ?? DEFAULT_E2B_TIMEOUT_MS;
    if (!Number.isInteger(timeoutMs) || timeoutMs < 10_000)
      throw new WsError(
        'INVALID_ARGUMENT',
        `timeoutMs must be a whole number of at least 10 000, not ${timeoutMs}`,
        {
          details: { timeoutMs },
        },
      );
    checkUserLabels(own.metadata, 'Metadata');
    const { limits, network, privileges, user, ...rest } = own;
    const policy = e2bPolicy({ limits, network, privileges });
    const checked = checkWorkspaceUser('E2BWorkspace', user);
    if (checked && 'uid' in checked)
      throw new WsError(
        'INVALID_ARGUMENT',
        `E2BWorkspace: user ${JSON.stringify(checked.text)} is a numeric id, but E2B runs commands as a named user of the template (user or root on E2B's templates): give a name`,
        { details: { option: 'user' } },
      );
    super({
      ...common,
      provider: new E2BProvider({
        ...rest,
        ...(checked ? { user: checked.text } : {}),
        template: rest.template ?? 'base',
        timeoutMs,
        policy,
      }),
    });
  }

  /** The id of the E2B sandbox this workspace is attached to, once initialized. */
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
