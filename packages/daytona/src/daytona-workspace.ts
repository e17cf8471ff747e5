import type { Daytona } from '@daytonaio/sdk';
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
import { daytonaPolicy } from './daytona-policy.js';
import {
  DaytonaProvider,
  type DaytonaResources,
  DEFAULT_DAYTONA_LIFECYCLE_TIMEOUT_MS,
} from './daytona-provider.js';

/** Options of {@link DaytonaWorkspace}. */
export interface DaytonaWorkspaceOptions extends CommonWorkspaceOptions, SandboxPolicyOptions {
  /** The Daytona API key. Default: `DAYTONA_API_KEY` from the environment. */
  apiKey?: string;
  /** The API's URL. Default: `DAYTONA_API_URL`, else Daytona's (`https://app.daytona.io/api`). */
  apiUrl?: string;
  /** The region sandboxes are created in. Default: `DAYTONA_TARGET`, else the organization's. */
  target?: string;
  /** An image to create the sandbox from (with `resources`). Not with `snapshot`. */
  image?: string;
  /** The snapshot to create the sandbox from. Default: Daytona's default snapshot. */
  snapshot?: string;
  /** Variables for the sandbox and every command. */
  env?: Readonly<Record<string, string>>;
  /** Labels put on a sandbox this workspace creates (besides its own `ws.*` keys). */
  labels?: Readonly<Record<string, string>>;
  /**
   * CPU cores, memory and disk (GiB) of a sandbox created from `image`. `limits` sets the same in
   * the spelling every backend takes; a field may be given in one of them only.
   */
  resources?: DaytonaResources;
  /**
   * The sandbox's time limit in milliseconds: Daytona stops it (files kept) after this long without
   * activity (its auto-stop interval, in whole minutes, rounded up). While the workspace is open its
   * activity is refreshed every minute; a host that goes away without `close()` leaves it to stop by
   * itself. `null` for none (it runs until closed or deleted). Default: Daytona's (15 minutes).
   */
  timeoutMs?: number | null;
  /** How long creating, starting, stopping or deleting the sandbox may take, in milliseconds. Default: 300 000. */
  lifecycleTimeoutMs?: number;
  /** An existing SDK client (`new Daytona(…)`, never closed here); the options that configure one are then ignored. */
  client?: Daytona;
  /**
   * The time limit of one request to Daytona's API or a sandbox's toolbox, in milliseconds: a
   * connection that stops answering without closing then fails the call instead of holding it.
   * Default: none (the SDK's); a long command run without the gateway is one request, so set it
   * above the longest such command.
   */
  requestTimeoutMs?: number;
  /** Owner tag put in the sandbox's labels (`ws.owner`), for reaping. Default: `ws`. */
  owner?: string;
  /** Start the gateway when the sandbox has node 18 or newer. Default: true. */
  gateway?: boolean;
  /**
   * The sandbox's OS user (Daytona's `user` at creation, AgentScope's `os_user`): commands, file
   * operations and the gateway run as it, and the workdir is `<its home>/workspace`. A user name
   * only (Daytona sets the account up by name), so a numeric id is refused (`INVALID_ARGUMENT`).
   * Default: Daytona's (`daytona`). Fixed when the sandbox is created: a sandbox found by its
   * workspace id that runs as another user is refused with `CONFLICT`.
   */
  user?: string;
  /**
   * Who the sandbox is opened for, put in its labels as `ws.user`, `ws.agent` and `ws.session`
   * (`ws ls` shows them). A `WorkspaceManager` with the package's factory passes its request's.
   */
  requester?: WorkspaceRequester;
}

const DAYTONA_KEYS: OptionKeys<DaytonaWorkspaceOptions> = {
  apiKey: true,
  apiUrl: true,
  target: true,
  image: true,
  snapshot: true,
  env: true,
  labels: true,
  resources: true,
  timeoutMs: true,
  lifecycleTimeoutMs: true,
  requestTimeoutMs: true,
  client: true,
  owner: true,
  gateway: true,
  user: true,
  requester: true,
  ...POLICY_KEYS,
};

function invalid(message: string, details: Record<string, unknown>): WsError {
  return new WsError('INVALID_ARGUMENT', message, { details });
}

/**
 * A workspace in a Daytona sandbox, through the official `@daytonaio/sdk`. The sandbox carries the
 * workspace id in its labels (`ws.workspace.id`) and is found by it again, started when stopped or
 * archived; `close()` stops it (files kept), `destroy()` deletes it. Tool calls and MCP go through the
 * in-sandbox gateway, reached over one long-lived session command's input and log stream.
 */
export class DaytonaWorkspace extends WorkspaceEngine<DaytonaProvider> {
  /**
   * Checks the options and does no I/O: the workspace starts at `initialize()` (or `open()`).
   * @throws WsError `INVALID_ARGUMENT` for an unknown option, a bad time limit or interval, `image` with `snapshot`, `resources` without `image`, a malformed `limits`, `network`, `privileges` or `user` (a numeric `user` too), a limit given in `resources` too, a `ws.` label or an unsafe workspace id; `CAPABILITY_UNSUPPORTED` for a policy Daytona cannot enforce (`limits.pids`, any `privileges`, `limits` without `image` or not in whole CPUs and GiB, an allow list of IPv6 blocks or of more than five).
   */
  constructor(options: DaytonaWorkspaceOptions = {}) {
    const { common, own } = splitOptions('DaytonaWorkspace', options, DAYTONA_KEYS);
    const { timeoutMs, lifecycleTimeoutMs = DEFAULT_DAYTONA_LIFECYCLE_TIMEOUT_MS, requestTimeoutMs } = own;
    if (timeoutMs !== undefined && timeoutMs !== null && (!Number.isInteger(timeoutMs) || timeoutMs < 60_000))
      throw invalid(`timeoutMs must be null or a whole number of at least 60 000, not ${timeoutMs}`, {
        timeoutMs,
      });
    if (!Number.isInteger(lifecycleTimeoutMs) || lifecycleTimeoutMs < 10_000)
      throw invalid(
        `lifecycleTimeoutMs must be a whole number of at least 10 000, not ${lifecycleTimeoutMs}`,
        {
          lifecycleTimeoutMs,
        },
      );
    if (requestTimeoutMs !== undefined && (!Number.isInteger(requestTimeoutMs) || requestTimeoutMs < 1_000))
      throw invalid(`requestTimeoutMs must be a whole number of at least 1 000, not ${requestTimeoutMs}`, {
        requestTimeoutMs,
      });
    if (own.image && own.snapshot)
      throw invalid('Give image or snapshot, not both', { image: own.image, snapshot: own.snapshot });
    if (own.resources && !own.image)
      throw invalid('resources apply to a sandbox created from an image: give image too', {});
    checkUserLabels(own.labels, 'Label');
    const user = checkWorkspaceUser('DaytonaWorkspace', own.user);
    if (user && 'uid' in user)
      throw invalid(
        `DaytonaWorkspace: user ${JSON.stringify(user.text)} is a numeric id, but Daytona sets the sandbox's OS user up by name: give a name`,
        { option: 'user' },
      );
    const { timeoutMs: _lifetime, limits, network, privileges, resources, ...rest } = own;
    const policy = daytonaPolicy({ limits, network, privileges }, resources, own.image);
    super({
      ...common,
      provider: new DaytonaProvider({
        ...rest,
        policy,
        lifecycleTimeoutMs,
        ...(timeoutMs !== undefined
          ? { autoStopMinutes: timeoutMs === null ? 0 : Math.ceil(timeoutMs / 60_000) }
          : {}),
      }),
    });
  }

  /** The id of the Daytona sandbox this workspace is attached to, once initialized. */
  get sandboxId(): string | undefined {
    return this.provider.sandboxId;
  }

  /** Milliseconds the last initialize took to find, start or create the sandbox. */
  get attachMs(): number | undefined {
    return this.provider.attachMs;
  }

  /** Milliseconds the gateway took to start and answer, once it did. */
  get gatewayStartMs(): number | undefined {
    return this.provider.gatewayStartMs;
  }
}
