import { randomBytes, randomUUID } from 'node:crypto';
import type Docker from 'dockerode';
import { agentHostConfig } from '../docker/agent-socket.js';
import { ContainerRegistry, type RegistryEntry } from '../docker/container-registry.js';
import { dockerMessage, dockerStatus, pauseContainer, unpauseContainer } from '../docker/exec.js';
import { withNetwork } from '../docker/network.js';
import { OpenSandboxHttpError, sandboxNotFound } from './errors.js';
import { CommandTable } from './execd-commands.js';
import {
  describedBy,
  labelsOf,
  OPENSANDBOX_LABELS,
  openSandboxFilter,
  readSettings,
  type SandboxDescription,
  type SandboxSettings,
  writeSettings,
} from './labels.js';

/** OpenSandbox's lifecycle states (spec `sandbox-lifecycle.yml`). */
export type SandboxState =
  | 'Pending'
  | 'Running'
  | 'Pausing'
  | 'Paused'
  | 'Resuming'
  | 'Stopping'
  | 'Terminated'
  | 'Failed';

/** One emulated sandbox: a container plus what OpenSandbox reports about it. */
export interface SandboxRecord extends Readonly<SandboxDescription> {
  readonly container: Docker.Container;
  /** The commands execd runs in it. */
  readonly commands: CommandTable;
  settings: SandboxSettings;
  state: SandboxState;
  reason: string | undefined;
  message: string | undefined;
  lastTransitionAt: Date;
}

export interface CreateSandboxInput {
  /** The image URI of the request. */
  imageUri: string;
  /** The local image it maps to. */
  image: string;
  entrypoint: string[];
  env: Record<string, string>;
  metadata: Record<string, string>;
  /** Seconds until expiry; null: never. */
  timeoutSeconds: number | null;
  nanoCpus: number | undefined;
  memoryBytes: number | undefined;
  /** Whether execd requires an access token (handed out in the endpoint's headers). */
  secureAccess: boolean;
  /** The egress policy; absent: allow-all. */
  networkPolicy?: SandboxNetworkPolicy;
}

/** An egress policy of the lifecycle API (the egress sidecar's `/policy` body). */
export interface SandboxNetworkPolicy {
  defaultAction: 'allow' | 'deny';
  egress: { action: 'allow' | 'deny'; target: string }[];
}

/**
 * Whether a policy allows nothing at all (deny by default, no rule allowing a target): the emulator
 * then gives the sandbox no network. Any other policy is recorded, not enforced: the emulator has no
 * egress sidecar and filters no destinations.
 */
export function deniesAllEgress(policy: SandboxNetworkPolicy | undefined): boolean {
  return policy?.defaultAction === 'deny' && policy.egress.every((rule) => rule.action === 'deny');
}

export interface RegistryOptions {
  docker: Docker;
  instance: string;
  log: (line: string) => void;
  /** Whether sandboxes get a network (see `OpenSandboxEmulatorOptions.network`). */
  network: boolean;
  /** How long Pending, Pausing and Resuming last at least, in ms. */
  transitionMs: number;
  /** The processes one sandbox may hold (the container's `PidsLimit`); 0: no limit. */
  pidsLimit: number;
}

type Entry = RegistryEntry<SandboxRecord>;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Container name of a sandbox. */
export function openSandboxContainerName(sandboxId: string): string {
  return `ws-opensandbox-${sandboxId}`;
}

/** The sandboxes of one emulator, their containers, and the timers that end them when they expire. */
export class SandboxRegistry extends ContainerRegistry<SandboxRecord> {
  /** Accepted changes still under way (a start, pause, resume or removal): `settled()` waits for them. */
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(private readonly options: RegistryOptions) {
    super();
  }

  /**
   * Resolves once every change accepted so far (answered 2xx, done in the background) has finished, or
   * after `timeoutMs`, whichever comes first: what the emulator said it would do is done before it exits.
   */
  async settled(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    // A change may queue another (a pause behind a start): looked at again until none is left.
    while (this.inFlight.size > 0 && Date.now() < deadline) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...this.inFlight]),
        new Promise((resolve) => {
          timer = setTimeout(resolve, deadline - Date.now());
        }),
      ]);
      clearTimeout(timer);
    }
  }

  /** Keeps `work` among the changes {@link settled} waits for, until it ends. */
  private track<T>(work: Promise<T>): Promise<T> {
    this.inFlight.add(work);
    void work.then(
      () => this.inFlight.delete(work),
      () => this.inFlight.delete(work),
    );
    return work;
  }

  get(sandboxId: string): SandboxRecord | undefined {
    return this.entries.get(sandboxId)?.record;
  }

  /** The sandbox, or OpenSandbox's 404. */
  require(sandboxId: string): SandboxRecord {
    const record = this.get(sandboxId);
    if (!record) throw sandboxNotFound(sandboxId);
    return record;
  }

  /** Finds the containers of earlier emulators of this instance and takes them over. */
  async restore(): Promise<void> {
    const { docker, log } = this.options;
    for (const summary of await this.leftContainers(docker, openSandboxFilter(this.options.instance))) {
      const described = describedBy(summary);
      if (!described || this.entries.has(described.description.id)) continue;
      const container = docker.getContainer(summary.Id);
      const { id } = described.description;
      try {
        let state: SandboxState = 'Running';
        if (summary.State === 'paused') state = 'Paused';
        else if (summary.State !== 'running') await container.start(); // say, after the engine restarted
        const settings = await readSettings(container, described.settings);
        this.add(container, described.description, settings, state);
        log(`opensandbox: restored sandbox ${id} (${state})`);
      } catch (error) {
        log(`opensandbox: cannot restore sandbox ${id}: ${dockerMessage(error)}`);
      }
    }
  }

  /** Creates the container now; it starts in the background (`Pending` → `Running`). */
  async create(input: CreateSandboxInput): Promise<SandboxRecord> {
    const description: SandboxDescription = {
      id: randomUUID(),
      image: input.imageUri,
      entrypoint: [...input.entrypoint],
      createdAt: new Date(),
      accessToken: input.secureAccess ? randomBytes(24).toString('hex') : undefined,
    };
    const settings: SandboxSettings = {
      metadata: { ...input.metadata },
      expiresAt:
        input.timeoutSeconds === null
          ? null
          : new Date(description.createdAt.getTime() + input.timeoutSeconds * 1000).toISOString(),
    };
    const container = await this.options.docker
      .createContainer(
        withNetwork(
          {
            name: openSandboxContainerName(description.id),
            Image: input.image,
            Entrypoint: [...input.entrypoint],
            Cmd: [],
            Labels: {
              ...labelsOf(description, settings, this.options.instance),
              ...(input.networkPolicy
                ? { [OPENSANDBOX_LABELS.networkPolicy]: JSON.stringify(input.networkPolicy) }
                : {}),
            },
            Env: Object.entries(input.env).map(([key, value]) => `${key}=${value}`),
            Tty: false,
            HostConfig: {
              ...agentHostConfig(),
              // An init reaps what killed commands leave; root holds no capability and cannot gain one.
              Init: true,
              CapDrop: ['ALL'],
              SecurityOpt: ['no-new-privileges'],
              ...(this.options.pidsLimit > 0 ? { PidsLimit: this.options.pidsLimit } : {}),
              ...(input.nanoCpus !== undefined ? { NanoCpus: input.nanoCpus } : {}),
              // No swap past the limit: what outgrows it is killed inside the sandbox.
              ...(input.memoryBytes !== undefined
                ? { Memory: input.memoryBytes, MemorySwap: input.memoryBytes }
                : {}),
            },
          },
          this.options.network,
          deniesAllEgress(input.networkPolicy),
        ),
      )
      .catch((error: unknown) => {
        throw new OpenSandboxHttpError(
          400,
          'INVALID_REQUEST',
          `cannot create the sandbox's container: ${dockerMessage(error)}`,
        );
      });
    const entry = this.add(container, description, settings, 'Pending');
    this.options.log(`opensandbox: creating sandbox ${description.id} from ${input.image}`);
    if (input.networkPolicy && !deniesAllEgress(input.networkPolicy))
      this.options.log(
        `opensandbox: sandbox ${description.id}: egress policy recorded, not enforced (the emulator filters no destinations)`,
      );
    void this.transition(
      entry,
      'Pending',
      'Running',
      () => container.start(),
      async () => {
        // An entrypoint that ends at once leaves no sandbox to run anything in. Looked at twice: one
        // that ends a moment after starting (a busy machine) is caught by the second look.
        for (const delayMs of [0, 300]) {
          if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
          const { State } = await container.inspect();
          if (!State.Running) throw new Error(entrypointEnded(State));
        }
      },
    );
    return entry.record;
  }

  /** `Running` → `Pausing` → `Paused` (the container is frozen). */
  pause(sandboxId: string): Promise<void> {
    const entry = this.entryOf(sandboxId);
    return this.queue(entry, () => {
      const { record } = entry;
      if (record.state === 'Pausing') return;
      if (record.state !== 'Running') throw conflict(record, 'paused');
      // Commands freeze with the container, as they do under the real runtime.
      // Commands are refused from now on (execd serves a Running sandbox only); the ones starting finish
      // their start first, or the freeze would catch them half-way.
      void this.transition(entry, 'Pausing', 'Paused', async () => {
        await pauseContainer(record.container);
      });
    });
  }

  /** `Paused` → `Resuming` → `Running`. */
  resume(sandboxId: string): Promise<void> {
    const entry = this.entryOf(sandboxId);
    return this.queue(entry, () => {
      const { record } = entry;
      if (record.state === 'Resuming') return;
      if (record.state !== 'Paused') throw conflict(record, 'resumed');
      void this.transition(entry, 'Resuming', 'Running', async () => {
        try {
          await unpauseContainer(record.container);
        } catch (error) {
          if (dockerStatus(error) !== 500 || !/not paused/i.test(dockerMessage(error))) throw error;
        }
      });
    });
  }

  /** Ends the sandbox: its commands, its container; later requests answer 404. */
  async remove(sandboxId: string, reason = 'user_delete'): Promise<void> {
    const entry = this.entryOf(sandboxId);
    await this.track(
      this.queue(entry, async () => {
        const { record } = entry;
        this.settle(record, 'Stopping', reason);
        this.disarm(entry);
        try {
          await record.container.remove({ force: true });
        } catch (error) {
          if (dockerStatus(error) !== 404) throw error;
        }
        this.settle(record, 'Terminated', reason);
        this.entries.delete(sandboxId);
        this.options.log(`opensandbox: sandbox ${sandboxId} terminated (${reason})`);
      }),
    );
  }

  /** Sets a new expiry (which must lie ahead) and re-arms the timer. */
  async renew(sandboxId: string, expiresAt: Date): Promise<SandboxRecord> {
    const entry = this.entryOf(sandboxId);
    if (expiresAt.getTime() <= Date.now())
      throw new OpenSandboxHttpError(
        400,
        'DOCKER::INVALID_EXPIRATION',
        'New expiration time must be in the future.',
      );
    if (entry.record.settings.expiresAt === null)
      throw new OpenSandboxHttpError(
        409,
        'DOCKER::INVALID_EXPIRATION',
        `Sandbox ${sandboxId} does not have automatic expiration enabled.`,
      );
    entry.record.settings.expiresAt = expiresAt.toISOString();
    await this.persist(entry.record);
    this.schedule(entry);
    return entry.record;
  }

  /** Merges `patch` into the metadata (a null value removes its key). */
  async patchMetadata(sandboxId: string, patch: Record<string, string | null>): Promise<SandboxRecord> {
    const record = this.require(sandboxId);
    for (const [key, value] of Object.entries(patch)) {
      if (value === null) delete record.settings.metadata[key];
      else record.settings.metadata[key] = value;
    }
    await this.persist(record);
    return record;
  }

  private entryOf(sandboxId: string): Entry {
    const entry = this.entries.get(sandboxId);
    if (!entry) throw sandboxNotFound(sandboxId);
    return entry;
  }

  private add(
    container: Docker.Container,
    description: SandboxDescription,
    settings: SandboxSettings,
    state: SandboxState,
  ): Entry {
    const record: SandboxRecord = {
      ...description,
      container,
      commands: new CommandTable(container),
      settings,
      state,
      reason: undefined,
      message: undefined,
      lastTransitionAt: new Date(),
    };
    const entry = this.register(record.id, record);
    this.schedule(entry);
    return entry;
  }

  private settle(record: SandboxRecord, state: SandboxState, reason?: string, message?: string): void {
    record.state = state;
    record.reason = reason;
    record.message = message;
    record.lastTransitionAt = new Date();
  }

  /** `interim` now; then, under the lock, `action` and the rest of the transition time, then `final`. */
  private transition(
    entry: Entry,
    interim: SandboxState,
    final: SandboxState,
    action: () => Promise<unknown>,
    /** Runs after the transition time; a throw fails the sandbox. */
    verify?: () => Promise<void>,
  ): Promise<void> {
    const { record } = entry;
    this.settle(record, interim);
    const started = Date.now();
    return this.track(
      this.queue(entry, async () => {
        if (!this.entries.has(record.id)) return;
        try {
          await action();
          await sleep(Math.max(0, this.options.transitionMs - (Date.now() - started)));
          await verify?.();
        } catch (error) {
          const message = dockerMessage(error);
          this.settle(record, 'Failed', 'runtime_error', message);
          this.options.log(`opensandbox: sandbox ${record.id} failed while ${interim}: ${message}`);
          return;
        }
        if (!this.entries.has(record.id)) return;
        this.settle(record, final);
        this.options.log(`opensandbox: sandbox ${record.id} is ${final}`);
      }),
    );
  }

  private async persist(record: SandboxRecord): Promise<void> {
    // The archive API works on a frozen (paused) container too.
    await writeSettings(record.container, record.settings, this.options.log);
  }

  /** Arms the expiry timer: past `expiresAt` the sandbox is terminated. */
  private schedule(entry: Entry): void {
    this.disarm(entry);
    const { expiresAt } = entry.record.settings;
    if (this.closed || expiresAt === null) return;
    const at = new Date(expiresAt).getTime();
    if (Number.isNaN(at)) return;
    this.arm(
      entry,
      at,
      () =>
        void this.remove(entry.record.id, 'ttl_expiry').catch((error: unknown) =>
          this.options.log(`opensandbox: expiry of ${entry.record.id} failed: ${dockerMessage(error)}`),
        ),
      () => this.schedule(entry),
    );
  }
}

/** The server's 409 for a pause of a sandbox that does not run, or a resume of one not paused. */
function conflict(record: SandboxRecord, verb: 'paused' | 'resumed'): OpenSandboxHttpError {
  return new OpenSandboxHttpError(
    409,
    verb === 'paused' ? 'DOCKER::SANDBOX_NOT_RUNNING' : 'DOCKER::SANDBOX_NOT_PAUSED',
    `Sandbox is not in a ${verb === 'paused' ? 'running' : 'paused'} state (it is ${record.state}).`,
  );
}

/** Why a sandbox whose container stopped by itself failed. */
function entrypointEnded(state: { ExitCode: number; Error: string }): string {
  return `the entrypoint exited with code ${state.ExitCode}${state.Error ? `: ${state.Error}` : ''}`;
}
