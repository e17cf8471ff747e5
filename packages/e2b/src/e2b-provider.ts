import { type CallOptions, WsError } from '@ws/core';
import {
  type BackendEventSink,
  type OwnOptions,
  type Provider,
  type ProviderOpenOptions,
  type ProviderSession,
  requesterLabels,
  retryEvents,
  throwIfAborted,
  WS_LABELS,
  withRetry,
} from '@ws/core/backend';
import { RemoteAttachment } from '@ws/core/gateway';
import { type ConnectionOpts, InvalidArgumentError, Sandbox, type SandboxInfo } from 'e2b';
import type { E2BNetworkOptions } from './e2b-policy.js';
import { E2BSandbox } from './e2b-sandbox.js';
import type { E2BWorkspaceOptions } from './e2b-workspace.js';
import { maximumTimeoutHours, translateE2BError } from './errors.js';

/** The workdir inside an E2B sandbox (as AgentScope's). */
export const E2B_WORKDIR = '/home/user/workspace';
const GATEWAY_HOME = '/home/user/.ws';
/** Where each workspace object attached to a sandbox keeps its record (see `Attachments` in @ws/core/backend). */
export const ATTACHED_DIR = `${GATEWAY_HOME}/attached`;
/** E2B's default sandbox time limit (AgentScope's too). */
export const DEFAULT_E2B_TIMEOUT_MS = 300_000;
/** How many times the SDK sends a request again after E2B's rate limit refused it. */
const RATE_LIMIT_RETRIES = 3;

/** Options of {@link E2BProvider}: the workspace class's own (documented there), defaults resolved. */
export type E2BProviderOptions = Omit<
  OwnOptions<E2BWorkspaceOptions>,
  'limits' | 'network' | 'privileges'
> & {
  template: string;
  timeoutMs: number;
  /** The network policy of a sandbox this workspace creates, as `Sandbox.create` takes it. */
  policy?: E2BNetworkOptions | undefined;
};

/** A sandbox of the listing, as this provider reads it. */
interface Found {
  readonly sandboxId: string;
  readonly startedAt: number;
  readonly state: string;
}

/**
 * Finds the workspace's sandbox by its metadata (running or paused; several → the newest, with a
 * warning), resumes or creates it, installs and starts the gateway over the sandbox's own process
 * stdin and stdout, and keeps the sandbox's time limit pushed back while the workspace is open.
 * `close()` pauses the sandbox; `destroy()` kills every sandbox carrying the workspace's id and owner tag.
 */
export class E2BProvider implements Provider {
  readonly backend = 'e2b';
  readonly description = 'E2B-sandbox-based';
  readonly expectedWorkdir = E2B_WORKDIR;
  readonly isolation = 'vm' as const;
  readonly mcp = true;
  readonly persistent = true;
  /** This object's hold on the sandbox, while open. */
  private attached: RemoteAttachment<Sandbox> | undefined;
  /**
   * The sandbox time limit asked of E2B: `timeoutMs`, or the longest a sandbox of the team may run once
   * E2B refused more (its plan's maximum length: 1 h on the base tier).
   */
  private timeoutMs: number;
  /** Milliseconds the last open took to find, resume or create the sandbox (before the gateway). */
  attachMs: number | undefined;

  constructor(private readonly options: E2BProviderOptions) {
    this.timeoutMs = options.timeoutMs;
  }

  /**
   * Runs a create or connect with the time limit; when E2B refuses it as longer than a sandbox may run,
   * once more with that maximum (a workspace then lives in sandboxes of the plan's length).
   */
  private async withinMaximumLength<T>(call: (timeoutMs: number) => Promise<T>): Promise<T> {
    try {
      return await call(this.timeoutMs);
    } catch (error) {
      const hours = maximumTimeoutHours(error instanceof WsError ? error.cause : error);
      const maximumMs = hours === undefined ? 0 : Math.floor(hours * 3600 + 1e-6) * 1000;
      if (maximumMs <= 0 || maximumMs >= this.timeoutMs) throw error;
      this.timeoutMs = maximumMs;
      return call(maximumMs);
    }
  }

  /** The id of the sandbox the workspace is attached to, once it is. */
  get sandboxId(): string | undefined {
    return this.attached?.vendor.sandboxId;
  }

  /** Milliseconds the gateway took to start, once it answered. */
  get gatewayStartMs(): number | undefined {
    return this.attached?.gatewayStartMs;
  }

  /** The SDK's connection options: only those given, so the SDK reads the rest from its environment. */
  private connection(signal?: AbortSignal): ConnectionOpts {
    const { apiKey, apiUrl, domain, sandboxUrl, requestTimeoutMs } = this.options;
    return {
      ...(apiKey ? { apiKey } : {}),
      ...(apiUrl ? { apiUrl } : {}),
      ...(domain ? { domain } : {}),
      ...(sandboxUrl ? { sandboxUrl } : {}),
      ...(requestTimeoutMs !== undefined ? { requestTimeoutMs } : {}),
      // The SDK sends a request again only after a 429 with `Retry-After` (E2B's rate limit, which
      // refused it undone), waiting as told within the request's time limit: safe for a create too.
      // Every other failure is the calls' own to repeat or not.
      retries: RATE_LIMIT_RETRIES,
      ...(signal ? { signal } : {}),
    };
  }

  /** The owner tag: with the workspace id, what names the workspace's sandbox. */
  private get owner(): string {
    return this.options.owner ?? 'ws';
  }

  /**
   * Every sandbox carrying the workspace id and this object's owner tag, running or paused, newest
   * first: another owner's sandbox of the same id is never opened, paused or killed.
   */
  private find(workspaceId: string, events?: BackendEventSink): Promise<Found[]> {
    return withRetry(() => this.findOnce(workspaceId), { safe: true, ...retryEvents(events) });
  }

  private async findOnce(workspaceId: string): Promise<Found[]> {
    const found: Found[] = [];
    try {
      const paginator = Sandbox.list({
        ...this.connection(),
        query: {
          metadata: { [WS_LABELS.id]: workspaceId, [WS_LABELS.owner]: this.owner },
          state: ['running', 'paused'],
        },
        limit: 100,
      });
      while (paginator.hasNext) {
        for (const info of (await paginator.nextItems()) as SandboxInfo[]) {
          // The filter is the service's; the check is ours (a sandbox of another id or owner is never touched).
          if (info.metadata?.[WS_LABELS.id] !== workspaceId) continue;
          if (info.metadata?.[WS_LABELS.owner] !== this.owner) continue;
          found.push({ sandboxId: info.sandboxId, startedAt: info.startedAt.getTime(), state: info.state });
        }
      }
    } catch (error) {
      // Unlike treating a failed listing as "none", which would create a second sandbox for the id.
      throw translateE2BError(error, 'listing the sandboxes');
    }
    return found.sort((a, b) => b.startedAt - a.startedAt || (a.sandboxId < b.sandboxId ? -1 : 1));
  }

  async open(options: ProviderOpenOptions): Promise<ProviderSession> {
    throwIfAborted(options.signal);
    const began = performance.now();
    const warnings: string[] = [];
    const { workspaceId } = options;
    const found = await this.find(workspaceId, options.events);
    if (found.length > 1) {
      warnings.push(
        `${found.length} E2B sandboxes carry workspace id ${workspaceId} (${found.map((item) => item.sandboxId).join(', ')}); using the newest, ${found[0]?.sandboxId}`,
      );
    }
    const sandbox = found[0]
      ? await this.connect(found[0].sandboxId, options.signal, options.events)
      : await this.create(workspaceId, options.signal, options.events);
    this.attachMs = performance.now() - began;
    options.events?.({
      type: found[0] ? 'sandbox.reattached' : 'sandbox.created',
      sandboxId: sandbox.sandboxId,
      durationMs: this.attachMs,
    });
    if (this.options.user !== undefined) await this.requireUser(sandbox, this.options.user);
    const { template, gateway } = this.options;
    const timeoutMs = this.timeoutMs;
    const direct = new E2BSandbox(sandbox, E2B_WORKDIR, this.options.env ?? {}, this.options.user);
    this.attached = new RemoteAttachment({
      vendor: sandbox,
      direct,
      workdir: E2B_WORKDIR,
      // A record older than the sandbox's time limit belongs to a host that went away.
      records: { folder: ATTACHED_DIR, staleMs: timeoutMs },
      // The sandbox's time limit is pushed back while the workspace is open.
      keepAlive: {
        everyMs: Math.max(5_000, Math.floor(timeoutMs / 3)),
        tick: (open) => open.setTimeout(timeoutMs),
      },
      gateway:
        gateway === false
          ? false
          : {
              start: (argv) => direct.spawnGateway(argv, { cwd: '/' }),
              home: GATEWAY_HOME,
              via: 'envd',
              describe: `the template ${template}`,
              // The vendor's command output is text: commands wait for the gateway, which carries bytes.
              directOutput: 'text',
              withoutGateway:
                'commands and files go through envd directly (command output is decoded as text), and MCP servers cannot run',
            },
      assetUrl: import.meta.url,
    });
    return this.attached.open(options, warnings);
  }

  /**
   * Asks envd about `/` as `user`, so that a user the template lacks fails the open with
   * `INVALID_ARGUMENT` naming it, rather than the first command with envd's message.
   */
  private async requireUser(sandbox: Sandbox, user: string): Promise<void> {
    try {
      await sandbox.files.getInfo('/', { user });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (error instanceof InvalidArgumentError && /user/i.test(message))
        throw new WsError(
          'INVALID_ARGUMENT',
          `E2BWorkspace: the template ${this.options.template} has no user ${JSON.stringify(user)} (${message}); E2B's templates have user and root`,
          { cause: error, details: { option: 'user', user, template: this.options.template } },
        );
      throw translateE2BError(error, `checking the user ${user}`);
    }
  }

  /** Connects to a sandbox (resuming a paused one): safe to send again. */
  private connect(
    sandboxId: string,
    signal: AbortSignal | undefined,
    events?: BackendEventSink,
  ): Promise<Sandbox> {
    return withRetry(
      () =>
        this.withinMaximumLength(async (timeoutMs) => {
          try {
            return await Sandbox.connect(sandboxId, { ...this.connection(signal), timeoutMs });
          } catch (error) {
            throw translateE2BError(error, `connecting to sandbox ${sandboxId}`);
          }
        }),
      { safe: true, ...(signal ? { signal } : {}), ...retryEvents(events) },
    );
  }

  private async create(
    workspaceId: string,
    signal: AbortSignal | undefined,
    events: BackendEventSink | undefined,
  ): Promise<Sandbox> {
    // Sent again only when the service refused it: one that failed may have created a sandbox.
    // (A refusal of a later request of the same call, the sandbox made, leaves two: the check below
    // keeps the older.)
    const sandbox = await withRetry(
      () =>
        this.withinMaximumLength((timeoutMs) =>
          Sandbox.create(this.options.template, {
            ...this.connection(signal),
            timeoutMs,
            metadata: {
              ...this.options.metadata,
              [WS_LABELS.id]: workspaceId,
              [WS_LABELS.owner]: this.owner,
              [WS_LABELS.created]: new Date().toISOString(),
              ...requesterLabels(this.options.requester),
            },
            ...(this.options.env ? { envs: { ...this.options.env } } : {}),
            ...this.options.policy,
            // A sandbox whose host went away pauses at its time limit: its files stay, its billing stops.
            lifecycle: { onTimeout: 'pause' },
          }).catch((error: unknown) => {
            throw translateE2BError(error, `creating a sandbox from template ${this.options.template}`);
          }),
        ),
      { safe: false, ...(signal ? { signal } : {}), ...retryEvents(events) },
    );
    // Two hosts that opened the same new id at once each created one: the older stays, the newer goes.
    const all = await this.find(workspaceId, events).catch(() => []);
    const oldest = all.at(-1);
    if (oldest && oldest.sandboxId !== sandbox.sandboxId) {
      await sandbox.kill().catch(() => false);
      return this.connect(oldest.sandboxId, signal, events);
    }
    return sandbox;
  }

  /** True while the sandbox exists and runs (a sandbox paused or killed from outside does not). */
  async alive(): Promise<boolean> {
    const sandbox = this.attached?.vendor;
    if (!sandbox) return false;
    return Sandbox.getInfo(sandbox.sandboxId, this.connection()).then(
      (info) => info.state === 'running',
      () => false,
    );
  }

  /**
   * Stops the gateway (and with it the MCP servers it runs), kills the processes this object
   * spawned, and pauses the sandbox unless another workspace object still uses it: its files are
   * kept and it costs nothing while paused.
   */
  async close(options: CallOptions = {}): Promise<void> {
    const attached = this.attached;
    this.attached = undefined;
    if (!attached || (await attached.close())) return;
    const sandbox = attached.vendor;
    // Pausing is safe to repeat: a service failing for a moment is asked again, twice, later.
    for (let attempt = 1; ; attempt++) {
      try {
        await sandbox.pause(this.connection(options.signal));
        return;
      } catch (error) {
        const translated = translateE2BError(error, `pausing sandbox ${sandbox.sandboxId}`);
        // Gone already: nothing to pause.
        if (translated.details?.lost) return;
        if (attempt >= 3 || translated.code !== 'BACKEND_UNAVAILABLE' || options.signal?.aborted)
          throw translated;
        await new Promise((resolve) => setTimeout(resolve, 500 * attempt));
      }
    }
  }

  /** Kills every sandbox carrying the workspace id and owner tag (its files go with it). */
  async destroy(options: ProviderOpenOptions): Promise<void> {
    const found = await this.find(options.workspaceId);
    await Promise.all(
      found.map(({ sandboxId }) =>
        // Killing again kills nothing more: safe to repeat.
        withRetry(
          async () => {
            try {
              await Sandbox.kill(sandboxId, this.connection());
            } catch (error) {
              throw translateE2BError(error, `killing sandbox ${sandboxId}`);
            }
          },
          { safe: true },
        ),
      ),
    );
  }
}

/**
 * Kills the sandboxes whose metadata names `owner` (all of them, running or paused), and returns their
 * ids: for tests and for cleaning up after a crashed service.
 */
export async function killOwnedSandboxes(
  owner: string,
  connection: Pick<E2BProviderOptions, 'apiKey' | 'apiUrl' | 'domain'> = {},
): Promise<string[]> {
  if (!owner) throw new WsError('INVALID_ARGUMENT', 'An owner tag is required');
  const opts = {
    ...(connection.apiKey ? { apiKey: connection.apiKey } : {}),
    ...(connection.apiUrl ? { apiUrl: connection.apiUrl } : {}),
    ...(connection.domain ? { domain: connection.domain } : {}),
  };
  const ids: string[] = [];
  const paginator = Sandbox.list({ ...opts, query: { metadata: { [WS_LABELS.owner]: owner } }, limit: 100 });
  while (paginator.hasNext) {
    for (const info of (await paginator.nextItems()) as SandboxInfo[])
      if (info.metadata?.[WS_LABELS.owner] === owner) ids.push(info.sandboxId);
  }
  await Promise.all(ids.map((id) => Sandbox.kill(id, opts).catch(() => false)));
  return ids;
}
