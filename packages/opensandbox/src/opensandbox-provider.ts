import { ConnectionConfig, Sandbox, type SandboxInfo, SandboxManager } from '@alibaba-group/opensandbox';
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
import { Downloads } from './downloads.js';
import { configuredTimeoutMaximum, translateOpenSandboxError } from './errors.js';
import { isLabelValue, metadataTime } from './metadata-time.js';
import { OpenSandboxSandbox } from './opensandbox-sandbox.js';
import type { OpenSandboxWorkspaceOptions } from './opensandbox-workspace.js';
import { hasMemoryLimit, type SandboxPolicyRequest } from './sandbox-policy.js';

/** The workdir inside an OpenSandbox sandbox (as AgentScope's). */
export const OPENSANDBOX_WORKDIR = '/workspace';
const GATEWAY_HOME = '/root/.ws';
/** AgentScope's sandbox time limit. */
export const DEFAULT_OPENSANDBOX_TIMEOUT_MS = 300_000;
/** AgentScope's default image. */
export const DEFAULT_OPENSANDBOX_IMAGE = 'python:3.11-slim';
/**
 * The shortest sandbox timeout the server takes, in seconds (its create request's `timeout` is at
 * least 60): a shorter `timeoutMs` is raised to it.
 */
export const OPENSANDBOX_MIN_TIMEOUT_SECONDS = 60;
/** How long a sandbox may take to become ready (AgentScope's). */
const READY_TIMEOUT_SECONDS = 30;
/** How long a sandbox that is pausing, resuming or starting may take to settle before it is used. */
const SETTLE_TIMEOUT_MS = 60_000;

/** Where each workspace object attached to a sandbox keeps its record (see `Attachments` in @ws/core/backend). */
export const ATTACHED_DIR = `${GATEWAY_HOME}/attached`;

/** The states in which a sandbox still holds the workspace's files. */
const LIVE_STATES = ['Pending', 'Running', 'Pausing', 'Paused', 'Resuming'];

/** Options of {@link OpenSandboxProvider}: the workspace class's own (documented there), defaults resolved. */
export type OpenSandboxProviderOptions = Omit<
  OwnOptions<OpenSandboxWorkspaceOptions>,
  'limits' | 'network' | 'privileges'
> & {
  /** `limits` and `network`, checked and mapped onto the create request (`resources` among them). */
  policy: SandboxPolicyRequest;
  image: string;
  /** The sandbox's time limit; null for none. */
  timeoutMs: number | null;
};

/** How to reach OpenSandbox: a connection of your own (`client`), or what makes one. */
export type OpenSandboxConnection = Pick<
  OpenSandboxWorkspaceOptions,
  'apiKey' | 'domain' | 'protocol' | 'requestTimeoutMs' | 'client'
>;

/** A sandbox of the listing, as this provider reads it. */
interface Found {
  readonly sandboxId: string;
  readonly createdAt: number;
  readonly state: string;
}

/** The connection to use: the caller's own (`client`), else a new one from the options. */
export function connectionOf(options: OpenSandboxConnection): ConnectionConfig {
  if (options.client) return options.client;
  return new ConnectionConfig({
    ...(options.domain ? { domain: options.domain } : {}),
    ...(options.apiKey ? { apiKey: options.apiKey } : {}),
    ...(options.protocol ? { protocol: options.protocol } : {}),
    ...(options.requestTimeoutMs !== undefined
      ? { requestTimeoutSeconds: options.requestTimeoutMs / 1000 }
      : {}),
  });
}

/** Every sandbox whose metadata holds every pair of `wanted`, in the given states (all pages). */
async function listByMetadata(
  connection: ConnectionConfig,
  wanted: Readonly<Record<string, string>>,
  states: readonly string[] | undefined,
): Promise<SandboxInfo[]> {
  const manager = SandboxManager.create({ connectionConfig: connection });
  try {
    const all: SandboxInfo[] = [];
    for (let page = 1; ; page++) {
      const listed = await manager.listSandboxInfos({
        metadata: { ...wanted },
        ...(states ? { states: [...states] } : {}),
        page,
        pageSize: 100,
      });
      // The filter is the server's; the check is ours (a sandbox of another id or owner is never touched).
      all.push(
        ...listed.items.filter((info) =>
          Object.entries(wanted).every(([key, value]) => info.metadata?.[key] === value),
        ),
      );
      if (!listed.pagination?.hasNextPage || listed.items.length === 0) return all;
    }
  } finally {
    await manager.close().catch(() => {});
  }
}

/**
 * Finds the workspace's sandbox by its metadata (several → the newest, with a warning), resumes it
 * when paused or creates it, installs and starts the gateway (reached through execd's proxy to its
 * port, or else over one long-lived command's streams),
 * and keeps the sandbox's time limit pushed back while the workspace is open. `close()` pauses the
 * sandbox; `destroy()` kills every sandbox carrying the workspace's id and owner tag.
 */
export class OpenSandboxProvider implements Provider {
  readonly backend = 'opensandbox';
  readonly description = 'OpenSandbox-sandbox-based';
  readonly expectedWorkdir = OPENSANDBOX_WORKDIR;
  readonly isolation = 'container' as const;
  readonly mcp = true;
  readonly persistent = true;
  private readonly connection: ConnectionConfig;
  /** This object's hold on the sandbox, while open. */
  private attached: RemoteAttachment<Sandbox> | undefined;
  /**
   * The sandbox's time limit in seconds as the server granted it (null: none): `timeoutMs` raised to the
   * server's minimum, or lowered to its configured maximum when it refused a longer one.
   */
  private timeoutSeconds: number | null;
  /** How the calls of an open tell the workspace's listeners about their retries. */
  private retries: Pick<RetryOptions, 'onRetry'> = {};
  /** The downloads of the sandboxes this object opens, cut when it lets them go. */
  private readonly downloads = new Downloads();
  /** Milliseconds the last open took to find, resume or create the sandbox (before the gateway). */
  attachMs: number | undefined;

  constructor(private readonly options: OpenSandboxProviderOptions) {
    this.connection = connectionOf(options);
    const { timeoutMs } = options;
    this.timeoutSeconds =
      timeoutMs === null ? null : Math.max(OPENSANDBOX_MIN_TIMEOUT_SECONDS, Math.ceil(timeoutMs / 1000));
  }

  /** How often the sandbox's time limit is renewed and this object's record touched. */
  private get keepAliveMs(): number {
    const { timeoutSeconds } = this;
    return timeoutSeconds === null ? 60_000 : Math.max(5_000, Math.floor((timeoutSeconds * 1000) / 3));
  }

  /** The id of the sandbox the workspace is attached to, once it is. */
  get sandboxId(): string | undefined {
    return this.attached?.vendor.id;
  }

  /** Milliseconds the gateway took to start, once it answered. */
  get gatewayStartMs(): number | undefined {
    return this.attached?.gatewayStartMs;
  }

  /**
   * Every sandbox carrying the workspace id and the owner tag that still holds its files, newest
   * first: another owner's sandbox of the same id is never opened, paused or killed.
   */
  private find(workspaceId: string): Promise<Found[]> {
    // A listing is safe to send again: a failing or throttling service is tried a few times.
    return withRetry(() => this.findOnce(workspaceId), { safe: true, ...this.retries });
  }

  private async findOnce(workspaceId: string): Promise<Found[]> {
    let infos: SandboxInfo[];
    try {
      infos = await listByMetadata(
        this.connection,
        { [WS_LABELS.id]: workspaceId, [WS_LABELS.owner]: this.options.owner ?? 'ws' },
        LIVE_STATES,
      );
    } catch (error) {
      // Unlike treating a failed listing as "none", which would create a second sandbox for the id.
      throw translateOpenSandboxError(error, 'listing the sandboxes');
    }
    return infos
      .map((info) => ({ sandboxId: info.id, createdAt: info.createdAt.getTime(), state: info.status.state }))
      .sort((a, b) => b.createdAt - a.createdAt || (a.sandboxId < b.sandboxId ? -1 : 1));
  }

  async open(options: ProviderOpenOptions): Promise<ProviderSession> {
    throwIfAborted(options.signal);
    const began = performance.now();
    const warnings: string[] = [];
    const { workspaceId } = options;
    this.retries = retryEvents(options.events);
    const found = await this.find(workspaceId);
    if (found.length > 1) {
      warnings.push(
        `${found.length} OpenSandbox sandboxes carry workspace id ${workspaceId} (${found.map((item) => item.sandboxId).join(', ')}); using the newest, ${found[0]?.sandboxId}`,
      );
    }
    const sandbox = found[0]
      ? await this.attachTo(found[0].sandboxId, options.signal)
      : await this.create(workspaceId, options.signal, warnings);
    this.attachMs = performance.now() - began;
    options.events?.({
      type: found[0] ? 'sandbox.reattached' : 'sandbox.created',
      sandboxId: sandbox.id,
      durationMs: this.attachMs,
    });
    const { image, gateway } = this.options;
    const { timeoutSeconds } = this;
    const direct = new OpenSandboxSandbox(
      sandbox,
      OPENSANDBOX_WORKDIR,
      this.options.env ?? {},
      this.downloads,
    );
    this.attached = new RemoteAttachment({
      vendor: sandbox,
      direct,
      workdir: OPENSANDBOX_WORKDIR,
      // A record not touched for three rounds belongs to a host that went away.
      records: { folder: ATTACHED_DIR, staleMs: 3 * this.keepAliveMs },
      // The sandbox's time limit is pushed back while the workspace is open.
      keepAlive: {
        everyMs: this.keepAliveMs,
        tick: async (open) => {
          if (timeoutSeconds !== null) await open.renew(timeoutSeconds);
        },
      },
      gateway:
        gateway === false
          ? false
          : {
              start: (argv) => direct.spawn(argv, { cwd: '/' }),
              home: GATEWAY_HOME,
              via: 'execd',
              // execd's reverse proxy to a port inside the sandbox, with the headers execd wants.
              endpoint: async (port) => {
                const endpoint = await sandbox.getEndpoint(port);
                return {
                  url: `${this.connection.protocol}://${endpoint.endpoint}`,
                  headers: { ...this.connection.headers, ...endpoint.headers },
                };
              },
              describe: `the image ${image}`,
              // The vendor's command output is text: commands wait for the gateway, which carries bytes.
              directOutput: 'text',
              withoutGateway:
                'commands and files go through execd directly (command output is decoded as text), and MCP servers cannot run',
            },
      assetUrl: import.meta.url,
    });
    await this.ensureWorkdir(direct, options.signal);
    const session = await this.attached.open(options, warnings);
    // The sandbox's cgroup counts what its memory limit killed (the engine reports it as such).
    return hasMemoryLimit(this.options.policy.resource)
      ? { ...session, oomKills: () => cgroupOomKills(session.sandbox) }
      : session;
  }

  private async ensureWorkdir(direct: OpenSandboxSandbox, signal: AbortSignal | undefined): Promise<void> {
    const made = await direct.exec(['mkdir', '-p', '--', OPENSANDBOX_WORKDIR], {
      cwd: '/',
      timeoutMs: 30_000,
      ...(signal ? { signal } : {}),
    });
    if (made.exitCode !== 0)
      throw new WsError(
        'BACKEND_ERROR',
        `Making the workdir ${OPENSANDBOX_WORKDIR} in the sandbox failed: ${made.stderrText.trim()}`,
      );
  }

  /** Waits until the sandbox leaves a passing state (pausing, resuming, starting); returns the state. */
  private async settle(sandboxId: string, signal: AbortSignal | undefined): Promise<string> {
    const manager = SandboxManager.create({ connectionConfig: this.connection });
    try {
      const deadline = Date.now() + SETTLE_TIMEOUT_MS;
      for (;;) {
        throwIfAborted(signal);
        const state = (await manager.getSandboxInfo(sandboxId)).status.state;
        if (!['Pausing', 'Resuming', 'Pending'].includes(state) || Date.now() > deadline) return state;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    } finally {
      await manager.close().catch(() => {});
    }
  }

  /** Resumes a paused sandbox, or connects to a running one. */
  private attachTo(sandboxId: string, signal: AbortSignal | undefined): Promise<Sandbox> {
    // Resuming or connecting is safe to ask again (a running sandbox stays running).
    return withRetry(() => this.attachOnce(sandboxId, signal), {
      safe: true,
      ...(signal ? { signal } : {}),
      ...this.retries,
    });
  }

  private async attachOnce(sandboxId: string, signal: AbortSignal | undefined): Promise<Sandbox> {
    try {
      const state = await this.settle(sandboxId, signal);
      const connect = {
        sandboxId,
        connectionConfig: this.connection,
        adapterFactory: this.downloads.adapterFactory,
        readyTimeoutSeconds: READY_TIMEOUT_SECONDS,
      };
      if (state === 'Paused') return await Sandbox.resume(connect);
      if (state === 'Running') return await Sandbox.connect(connect);
      throw new WsError(
        'BACKEND_UNAVAILABLE',
        `The OpenSandbox sandbox ${sandboxId} of this workspace is ${state}; it can be neither resumed nor used`,
        { details: { sandboxId, state } },
      );
    } catch (error) {
      throw translateOpenSandboxError(error, `attaching to sandbox ${sandboxId}`);
    }
  }

  private async create(
    workspaceId: string,
    signal: AbortSignal | undefined,
    warnings: string[],
  ): Promise<Sandbox> {
    throwIfAborted(signal);
    const { image, env, entrypoint } = this.options;
    const { resource, networkPolicy } = this.options.policy;
    const what = `creating a sandbox from image ${image}`;
    const requested = this.timeoutSeconds;
    const createOnce = (timeoutSeconds: number | null) =>
      Sandbox.create({
        image,
        connectionConfig: this.connection,
        adapterFactory: this.downloads.adapterFactory,
        // The id keys go last: they win over a user's value.
        metadata: {
          ...this.options.metadata,
          [WS_LABELS.id]: workspaceId,
          [WS_LABELS.owner]: this.options.owner ?? 'ws',
          [WS_LABELS.created]: metadataTime(),
          ...requesterLabels(this.options.requester, isLabelValue),
        },
        timeoutSeconds,
        readyTimeoutSeconds: READY_TIMEOUT_SECONDS,
        ...(env ? { env: { ...env } } : {}),
        ...(resource ? { resource: { ...resource } } : {}),
        ...(networkPolicy ? { networkPolicy } : {}),
        ...(entrypoint ? { entrypoint: [...entrypoint] } : {}),
      });
    // Sent again only when the service refused it: one that failed may have created a sandbox. (A
    // refusal of a later request of the same call, the sandbox made, leaves two: the check below
    // keeps the older.)
    const sandbox = await withRetry(
      async () => {
        try {
          return await createOnce(this.timeoutSeconds);
        } catch (error) {
          // A timeout past the server's maximum is refused before anything is made: asked again
          // with the maximum, and the sandbox is kept alive by renewals as long as the workspace is open.
          const maximum = configuredTimeoutMaximum(error);
          if (maximum === undefined || requested === null || maximum >= requested)
            throw translateOpenSandboxError(error, what);
          this.timeoutSeconds = maximum;
          warnings.push(
            `OpenSandbox takes sandbox timeouts of at most ${maximum} s; the sandbox's timeout is ${maximum} s instead of ${requested} s`,
          );
          return await createOnce(maximum).catch((again: unknown) => {
            throw translateOpenSandboxError(again, what);
          });
        }
      },
      { safe: false, ...(signal ? { signal } : {}), ...this.retries },
    );
    // Two hosts that opened the same new id at once each created one: the older stays, the newer goes.
    const all = await this.find(workspaceId).catch(() => []);
    const oldest = all.at(-1);
    if (oldest && oldest.sandboxId !== sandbox.id) {
      await sandbox.kill().catch(() => {});
      await sandbox.close().catch(() => {});
      return this.attachTo(oldest.sandboxId, signal);
    }
    return sandbox;
  }

  /** True while the sandbox exists and runs (a sandbox paused or killed from outside does not). */
  async alive(): Promise<boolean> {
    const sandbox = this.attached?.vendor;
    if (!sandbox) return false;
    return sandbox.getInfo().then(
      (info) => info.status.state === 'Running',
      () => false,
    );
  }

  /**
   * Stops the gateway (and with it the MCP servers it runs), kills the processes this object
   * spawned, and pauses the sandbox: its files are kept and nothing runs in it.
   */
  async close(_options: CallOptions = {}): Promise<void> {
    const attached = this.attached;
    this.attached = undefined;
    if (!attached) return;
    const sandbox = attached.vendor;
    // Another workspace object (of this process or another host) may still work in it; nothing of
    // this object's may still be starting in the sandbox when it pauses.
    const shared = await attached.close();
    try {
      if (shared) return;
      // The reaper counts a paused sandbox's idle time from here (the listing does not say when it paused).
      await sandbox.patchMetadata({ [WS_LABELS.released]: metadataTime() }).catch(() => {});
      await sandbox.pause();
    } catch (error) {
      const translated = translateOpenSandboxError(error, `pausing sandbox ${sandbox.id}`);
      // Gone already: nothing to pause.
      if (!translated.details?.lost) throw translated;
    } finally {
      // A download nobody finished reading would hold the SDK's close until its request ended.
      this.downloads.cancelAll();
      await sandbox.close().catch(() => {});
    }
  }

  /** Kills every sandbox carrying the workspace id (its files go with it). */
  async destroy(options: ProviderOpenOptions): Promise<void> {
    const found = await this.find(options.workspaceId);
    const manager = SandboxManager.create({ connectionConfig: this.connection });
    try {
      await Promise.all(
        found.map(async ({ sandboxId }) => {
          try {
            await manager.killSandbox(sandboxId);
          } catch (error) {
            const translated = translateOpenSandboxError(error, `killing sandbox ${sandboxId}`);
            if (!translated.details?.lost) throw translated;
          }
        }),
      );
    } finally {
      await manager.close().catch(() => {});
    }
  }
}

/**
 * Kills the sandboxes whose metadata names `owner` (all of them, in any state), and returns their
 * ids: for tests and for cleaning up after a crashed service.
 */
export async function killOwnedSandboxes(
  owner: string,
  connection: OpenSandboxConnection = {},
): Promise<string[]> {
  if (!owner) throw new WsError('INVALID_ARGUMENT', 'An owner tag is required');
  const config = connectionOf(connection);
  const ids = (await listByMetadata(config, { [WS_LABELS.owner]: owner }, undefined)).map((info) => info.id);
  const manager = SandboxManager.create({ connectionConfig: config });
  try {
    await Promise.all(ids.map((id) => manager.killSandbox(id).catch(() => {})));
  } finally {
    await manager.close().catch(() => {});
  }
  return ids;
}
