import type { Daytona, Sandbox } from '@daytonaio/sdk';
import { type CallOptions, WsError } from '@ws/core';
import {
  cgroupOomKills,
  type OwnOptions,
  type Provider,
  type ProviderOpenOptions,
  type ProviderSession,
  type RetryOptions,
  requesterLabels,
  retryEvents,
  throwIfAborted,
  WS_LABELS,
  withRetry,
} from '@ws/core/backend';
import { RemoteAttachment } from '@ws/core/gateway';

import { newClient } from './client.js';
import type { DaytonaPolicy } from './daytona-policy.js';
import { DaytonaSandbox } from './daytona-sandbox.js';
import type { DaytonaWorkspaceOptions } from './daytona-workspace.js';
import { isStateRefusal, translateDaytonaError } from './errors.js';
import { deleteSandbox, findSandboxes, readySandbox } from './sandbox-lifecycle.js';

/** The workdir inside a Daytona sandbox of the default user (`<home>/workspace`). */
export const DAYTONA_WORKDIR = '/home/daytona/workspace';
/** How long create, start, stop and delete may take, by default. */
export const DEFAULT_DAYTONA_LIFECYCLE_TIMEOUT_MS = 300_000;
/** While open, the sandbox's activity is refreshed (so auto-stop does not take it) this often. */
const KEEPALIVE_MS = 60_000;
/** A record not touched for this long belongs to a host that went away. */
export const STALE_RECORD_MS = 3 * KEEPALIVE_MS;

/** The resources of a sandbox created from an image. */
export interface DaytonaResources {
  /** CPU cores. */
  cpu?: number;
  /** Memory in GiB. */
  memory?: number;
  /** Disk in GiB. */
  disk?: number;
}

/** Options of {@link DaytonaProvider}: the workspace class's own (documented there), defaults resolved. */
export type DaytonaProviderOptions = Omit<
  OwnOptions<DaytonaWorkspaceOptions>,
  'timeoutMs' | 'limits' | 'network' | 'privileges' | 'resources'
> & {
  lifecycleTimeoutMs: number;
  /** The sandbox policy (with `resources`), as `daytona.create` takes it. */
  policy: DaytonaPolicy;
  /** Daytona's auto-stop interval in minutes (0: never), from `timeoutMs`; unset: Daytona's default. */
  autoStopMinutes?: number | undefined;
};

/**
 * Finds the workspace's sandbox by its labels (several → the newest, with a warning), starts it when
 * stopped or archived (recovers it from a recoverable error), or creates it; installs and starts the
 * gateway over one long-lived session command; keeps the sandbox's activity fresh while open.
 * `close()` stops the sandbox; `destroy()` deletes every sandbox carrying the workspace's id and owner tag.
 */
export class DaytonaProvider implements Provider {
  readonly backend = 'daytona';
  readonly description = 'Daytona-sandbox-based';
  readonly expectedWorkdir = DAYTONA_WORKDIR;
  readonly isolation = 'vm' as const;
  readonly mcp = true;
  readonly persistent = true;
  private daytona: Daytona | undefined;
  /** This object's hold on the sandbox, while open. */
  private attached: RemoteAttachment<Sandbox> | undefined;
  /** How the calls of an open tell the workspace's listeners about their retries. */
  private retries: Pick<RetryOptions, 'onRetry'> = {};
  /** Milliseconds the last open took to find, start or create the sandbox (before the gateway). */
  attachMs: number | undefined;

  constructor(private readonly options: DaytonaProviderOptions) {}

  /** The id of the sandbox the workspace is attached to, once it is. */
  get sandboxId(): string | undefined {
    return this.attached?.vendor.id;
  }

  /** Milliseconds the gateway took to start, once it answered. */
  get gatewayStartMs(): number | undefined {
    return this.attached?.gatewayStartMs;
  }

  private client(): Daytona {
    this.daytona ??= this.options.client ?? newClient(this.options);
    return this.daytona;
  }

  private get timeoutSeconds(): number {
    return Math.ceil(this.options.lifecycleTimeoutMs / 1000);
  }

  async open(options: ProviderOpenOptions): Promise<ProviderSession> {
    throwIfAborted(options.signal);
    const began = performance.now();
    const warnings: string[] = [];
    const { workspaceId } = options;
    const daytona = this.client();
    this.retries = retryEvents(options.events);
    const found = await findSandboxes(daytona, workspaceId, this.options.owner ?? 'ws', this.retries);
    const usable = found.filter((sandbox) => sandbox.state !== 'error' || sandbox.recoverable);
    if (found.length > 0 && usable.length === 0)
      throw new WsError(
        'BACKEND_ERROR',
        `The Daytona sandbox of workspace ${workspaceId} (${found[0]?.id}) is in an error it cannot recover from: ${found[0]?.errorReason ?? 'no reason given'}; destroy() removes it`,
        { details: { sandboxId: found[0]?.id } },
      );
    if (usable.length > 1)
      warnings.push(
        `${usable.length} Daytona sandboxes carry workspace id ${workspaceId} (${usable.map((item) => item.id).join(', ')}); using the newest, ${usable[0]?.id}`,
      );
    const asked = this.options.user;
    if (usable[0] && asked !== undefined && usable[0].user !== asked)
      throw new WsError(
        'CONFLICT',
        `The Daytona sandbox of workspace ${workspaceId} (${usable[0].id}) runs as ${usable[0].user}, not ${asked}, and a sandbox's user cannot change; open it with the same user, or destroy() it first`,
        { details: { sandboxId: usable[0].id, user: usable[0].user, wantedUser: asked } },
      );
    const sandbox = usable[0]
      ? await readySandbox(usable[0], this.timeoutSeconds, this.retries)
      : await this.create(daytona, workspaceId);
    this.attachMs = performance.now() - began;
    options.events?.({
      type: usable[0] ? 'sandbox.reattached' : 'sandbox.created',
      sandboxId: sandbox.id,
      durationMs: this.attachMs,
    });
    const home = (await sandbox.getUserHomeDir().catch(() => undefined)) || '/home/daytona';
    const workdir = `${home}/workspace`;
    const direct = new DaytonaSandbox(sandbox, workdir, this.options.env ?? {});
    this.attached = new RemoteAttachment({
      vendor: sandbox,
      direct,
      workdir,
      records: { folder: `${home}/.ws/attached`, staleMs: STALE_RECORD_MS },
      // Auto-stop counts idle time from the sandbox's last activity.
      keepAlive: { everyMs: KEEPALIVE_MS, tick: (open) => open.refreshActivity() },
      gateway:
        this.options.gateway === false
          ? false
          : {
              start: (argv) => direct.spawnGateway(argv, { cwd: '/' }),
              home: `${home}/.ws`,
              via: 'the toolbox',
              describe: this.options.image ? `the image ${this.options.image}` : 'the sandbox',
              // The vendor's command output is bytes: the gateway starts once the workspace is in use.
              directOutput: 'bytes',
              withoutGateway:
                'commands and files go through the toolbox directly (spawn is unavailable), and MCP servers cannot run',
            },
      assetUrl: import.meta.url,
    });
    const session = await this.attached.open(options, warnings);
    // A command past the memory limit is killed inside the sandbox's cgroup, which counts it.
    return this.options.policy.memoryLimited
      ? { ...session, oomKills: () => cgroupOomKills(session.sandbox) }
      : session;
  }

  private async create(daytona: Daytona, workspaceId: string): Promise<Sandbox> {
    const { image, snapshot, env, labels, autoStopMinutes, owner, policy } = this.options;
    const { resources, ...network } = policy.params;
    const base = {
      labels: {
        ...labels,
        [WS_LABELS.id]: workspaceId,
        [WS_LABELS.owner]: owner ?? 'ws',
        [WS_LABELS.created]: new Date().toISOString(),
        ...requesterLabels(this.options.requester),
      },
      public: false,
      ...(this.options.user !== undefined ? { user: this.options.user } : {}),
      ...(env ? { envVars: { ...env } } : {}),
      ...(autoStopMinutes !== undefined ? { autoStopInterval: autoStopMinutes } : {}),
      ...network,
    };
    const what = `creating a sandbox from ${image ? `image ${image}` : `snapshot ${snapshot ?? '(default)'}`}`;
    // Sent again only when the service refused it: one that failed may have created a sandbox.
    // (A refusal of a later request of the same call, the sandbox made, leaves two: the check below
    // keeps the older.)
    const sandbox = await withRetry(
      async () => {
        try {
          return image
            ? await daytona.create(
                { ...base, image, ...(resources ? { resources: { ...resources } } : {}) },
                { timeout: this.timeoutSeconds },
              )
            : await daytona.create(
                { ...base, ...(snapshot ? { snapshot } : {}) },
                { timeout: this.timeoutSeconds },
              );
        } catch (error) {
          throw translateDaytonaError(error, what);
        }
      },
      { safe: false, ...this.retries },
    );
    // Two hosts that opened the same new id at once each created one: the older stays, the newer goes.
    const all = await findSandboxes(daytona, workspaceId, this.options.owner ?? 'ws', this.retries).catch(
      () => [],
    );
    const oldest = all.at(-1);
    if (oldest && oldest.id !== sandbox.id) {
      await sandbox.delete(this.timeoutSeconds).catch(() => {});
      return readySandbox(oldest, this.timeoutSeconds, this.retries);
    }
    return sandbox;
  }

  /** True while the sandbox exists and is started (one stopped or deleted from outside is not). */
  async alive(): Promise<boolean> {
    const sandbox = this.attached?.vendor;
    if (!sandbox || !this.daytona) return false;
    return this.daytona.get(sandbox.id).then(
      (info) => info.state === 'started',
      () => false,
    );
  }

  /**
   * Stops the gateway (and with it the MCP servers it runs), kills the processes this object started,
   * and stops the sandbox unless another workspace object still uses it: its files are kept.
   */
  async close(_options: CallOptions = {}): Promise<void> {
    const attached = this.attached;
    this.attached = undefined;
    const shared = (await attached?.close()) ?? false;
    const sandbox = attached?.vendor;
    try {
      if (!sandbox || shared) return;
      try {
        // Sent again only after a rate limit refused it (it did not run).
        await withRetry(
          async () => {
            try {
              await sandbox.stop(this.timeoutSeconds);
            } catch (error) {
              // Stopped already (auto-stop, another host), or being changed by another hand: the
              // service refused, and there is nothing for this object to stop.
              if (isStateRefusal(error)) return;
              throw translateDaytonaError(error, `stopping sandbox ${sandbox.id}`);
            }
          },
          { safe: false },
        );
      } catch (error) {
        // Gone or stopped already: nothing to stop.
        if ((error as WsError).details?.lost) return;
        throw error;
      }
    } finally {
      await this.dispose();
    }
  }

  private async dispose(): Promise<void> {
    const daytona = this.daytona;
    this.daytona = undefined;
    // A client the caller gave is theirs to close.
    if (daytona !== this.options.client) await daytona?.[Symbol.asyncDispose]().catch(() => {});
  }

  /** Deletes every sandbox carrying the workspace id (its files go with it). */
  async destroy(options: ProviderOpenOptions): Promise<void> {
    const daytona = this.client();
    try {
      const found = await findSandboxes(daytona, options.workspaceId, this.options.owner ?? 'ws');
      await Promise.all(
        found.map(async (sandbox) => {
          try {
            await deleteSandbox(sandbox, this.timeoutSeconds);
          } catch (error) {
            if (!(error as WsError).details?.lost) throw error;
          }
        }),
      );
    } finally {
      await this.dispose();
    }
  }
}
