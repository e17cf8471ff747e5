import { randomBytes } from 'node:crypto';
import { Code, ConnectError } from '@connectrpc/connect';
import type Docker from 'dockerode';
import { agentHostConfig } from '../docker/agent-socket.js';
import { ContainerRegistry, type RegistryEntry } from '../docker/container-registry.js';
import { dockerMessage, dockerStatus, pauseContainer, unpauseContainer } from '../docker/exec.js';
import { withNetwork } from '../docker/network.js';
import { HttpError } from '../http/http-util.js';
import { AccountResolver } from './accounts.js';
import { type EgressRules, isOffline } from './egress.js';
import {
  describedBy,
  instanceFilter,
  labelsOf,
  readEndAt,
  type SandboxDescription,
  writeEndAt,
} from './labels.js';
import { ProcessTable } from './process-table.js';

/** E2B's default sandbox timeout when a request gives none, in seconds. */
export const DEFAULT_TIMEOUT_SECONDS = 300;

export type SandboxState = 'running' | 'paused';

/** One emulated sandbox: a container plus what E2B reports about it. */
export interface SandboxRecord extends Readonly<Omit<SandboxDescription, 'endAt'>> {
  readonly container: Docker.Container;
  endAt: Date;
  state: SandboxState;
  /** Its start or its last resume: the maximum length of a sandbox counts from there. */
  runningSince: Date;
  readonly processes: ProcessTable;
  readonly accounts: AccountResolver;
}

type Entry = RegistryEntry<SandboxRecord>;

export interface CreateSandboxInput {
  templateId: string;
  image: string;
  alias: string | undefined;
  metadata: Record<string, string>;
  envVars: Record<string, string>;
  timeoutSeconds: number;
  autoPause: boolean;
  autoResume: boolean;
  allowInternetAccess: boolean | null;
  /** Recorded and reported; only an allow list that allows nothing is enforced (no network). */
  egress: EgressRules | undefined;
  /** Running sandboxes allowed at once: one more is refused with 429. */
  maxRunning: number;
}

/** What the control plane answers a create or resume beyond the running sandboxes allowed. */
function concurrencyError(maxRunning: number): HttpError {
  return new HttpError(
    429,
    `you have reached the maximum number of concurrent E2B sandboxes (${maxRunning}). If you need more, please visit 'https://e2b.dev/docs/billing'`,
  );
}

/** The longest wait of `close()` for lifecycle changes already accepted. */
const SETTLE_MS = 30_000;

function sandboxIdOf(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const bytes = randomBytes(20);
  let id = '';
  for (const byte of bytes) id += alphabet[byte % alphabet.length];
  return id;
}

/** Container name of a sandbox. */
export function sandboxContainerName(sandboxId: string): string {
  return `ws-e2b-${sandboxId}`;
}

/** The sandboxes of one emulator, their containers, and the timers that end them. */
export class SandboxRegistry extends ContainerRegistry<SandboxRecord> {
  /** The creation under way (see `create`). */
  private creating: Promise<unknown> = Promise.resolve();
  /** Kills, pauses and expiries under way: `settle()` waits for them. */
  private readonly changing = new Set<Promise<unknown>>();

  constructor(
    private readonly docker: Docker,
    private readonly log: (line: string) => void,
    /** The instance whose containers this registry creates and takes over. */
    private readonly instance: string,
    /** Whether sandboxes get a network (see `E2BEmulatorOptions.network`). */
    private readonly network: boolean,
  ) {
    super();
  }

  get(sandboxId: string): SandboxRecord | undefined {
    return this.entries.get(sandboxId)?.record;
  }

  /** Finds the containers of earlier emulators of this instance and takes them over. */
  async restore(): Promise<void> {
    for (const summary of await this.leftContainers(this.docker, instanceFilter(this.instance))) {
      const description = describedBy(summary);
      if (!description || this.entries.has(description.sandboxId)) continue;
      const container = this.docker.getContainer(summary.Id);
      try {
        // E2B has no stopped state: a container stopped meanwhile (say, by an engine restart) runs again.
        if (summary.State !== 'running' && summary.State !== 'paused') await container.start();
      } catch (error) {
        this.log(
          `e2b: cannot restart the container of sandbox ${description.sandboxId}: ${dockerMessage(error)}`,
        );
        continue;
      }
      const record = this.add(
        container,
        {
          ...description,
          endAt: (await readEndAt(container)) ?? description.endAt,
        },
        summary.State === 'paused' ? 'paused' : 'running',
      );
      this.log(
        `e2b: restored sandbox ${record.sandboxId} (${record.state}, ends ${record.endAt.toISOString()})`,
      );
    }
  }

  /** Registers a sandbox and arms its timer. */
  private add(
    container: Docker.Container,
    description: SandboxDescription,
    state: SandboxState,
  ): SandboxRecord {
    const record: SandboxRecord = {
      ...description,
      container,
      state,
      runningSince: description.startedAt,
      processes: new ProcessTable(container),
      accounts: new AccountResolver(container),
    };
    this.register(record.sandboxId, record);
    this.schedule(record.sandboxId);
    return record;
  }

  /**
   * Creates one sandbox at a time, so that sandboxes become listable in the order of their
   * `startedAt`, as E2B's control plane lists them: a client that creates and then lists sees every
   * sandbox started before its own.
   */
  create(input: CreateSandboxInput): Promise<SandboxRecord> {
    const created = this.creating.then(() => this.createNow(input));
    this.creating = created.catch(() => {});
    return created;
  }

  private async createNow(input: CreateSandboxInput): Promise<SandboxRecord> {
    if (this.running() >= input.maxRunning) throw concurrencyError(input.maxRunning);
    const startedAt = new Date();
    const description: SandboxDescription = {
      sandboxId: sandboxIdOf(),
      templateId: input.templateId,
      alias: input.alias,
      metadata: { ...input.metadata },
      startedAt,
      endAt: new Date(startedAt.getTime() + input.timeoutSeconds * 1000),
      envdAccessToken: randomBytes(24).toString('hex'),
      autoPause: input.autoPause,
      autoResume: input.autoResume,
      allowInternetAccess: input.allowInternetAccess,
      egress: input.egress,
    };
    const options = withNetwork(
      {
        name: sandboxContainerName(description.sandboxId),
        Image: input.image,
        // The sandbox idles until envd calls exec into it; an init reaps what killed commands leave behind.
        Entrypoint: ['sleep'],
        Cmd: ['infinity'],
        Labels: labelsOf(description, this.instance),
        Env: Object.entries(input.envVars).map(([name, value]) => `${name}=${value}`),
        Tty: false,
        HostConfig: {
          ...agentHostConfig(),
          Init: true,
          // E2B runs commands as an unprivileged user: here root in the container holds no capability
          // and cannot gain one, which is what that means for a command.
          CapDrop: ['ALL'],
          SecurityOpt: ['no-new-privileges'],
        },
      },
      this.network,
      isOffline(input.allowInternetAccess, input.egress),
    );
    let container: Docker.Container;
    try {
      container = await this.docker.createContainer(options);
    } catch (error) {
      // An engine without docker-init: fall back to no init process.
      if (!/init/i.test(dockerMessage(error))) throw error;
      container = await this.docker.createContainer({
        ...options,
        HostConfig: { ...options.HostConfig, Init: false },
      });
    }
    try {
      await container.start();
    } catch (error) {
      await container.remove({ force: true }).catch(() => {});
      throw error;
    }
    // The end of its creation is in a label; the state file is written once it moves.
    const record = this.add(container, description, 'running');
    this.log(
      `e2b: created sandbox ${record.sandboxId} from ${input.image} (ends ${record.endAt.toISOString()})`,
    );
    return record;
  }

  /** The sandboxes running now. */
  private running(): number {
    return this.list().filter((record) => record.state === 'running').length;
  }

  /** Removes a sandbox and its container; false when it does not exist. */
  kill(sandboxId: string): Promise<boolean> {
    return this.tracked(
      this.withLock(sandboxId, async (entry) => {
        if (!entry) return false;
        await this.removeEntry(entry, 'killed');
        return true;
      }),
    );
  }

  /** Pauses (docker pause); 'conflict' when already paused. */
  pause(sandboxId: string): Promise<'paused' | 'conflict' | 'missing'> {
    return this.tracked(
      this.withLock(sandboxId, async (entry) => {
        if (!entry) return 'missing';
        if (entry.record.state === 'paused') return 'conflict';
        await this.pauseEntry(entry);
        return 'paused';
      }),
    );
  }

  /** Keeps `change` until it settles, for `settle()`. */
  private tracked<T>(change: Promise<T>): Promise<T> {
    this.changing.add(change);
    const forget = () => this.changing.delete(change);
    change.then(forget, forget);
    return change;
  }

  /**
   * Resolves once the kills, pauses and expiries under way are done (a deletion the API has accepted
   * completes, though the emulator stops), or after `timeoutMs`.
   */
  async settle(timeoutMs = SETTLE_MS): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    });
    // Changes queued behind one under way are waited for too.
    while (this.changing.size > 0) {
      const done = await Promise.race([
        Promise.allSettled([...this.changing]).then(() => true),
        limit.then(() => false),
      ]);
      if (!done) break;
    }
    clearTimeout(timer);
  }

  /**
   * Resumes a paused sandbox (refused with 429 beyond `sandboxes` running), or extends a running one's
   * end (never shortens it, nor past its maximum length), as E2B's connect does.
   */
  connect(
    sandboxId: string,
    timeoutSeconds: number,
    limits: { timeoutMaxMs: number; sandboxes: number },
  ): Promise<{ record: SandboxRecord; resumed: boolean } | 'missing' | 'too-long'> {
    return this.withLock(sandboxId, async (entry) => {
      if (!entry) return 'missing';
      const { record } = entry;
      let requestedEnd = new Date(Date.now() + timeoutSeconds * 1000);
      let resumed = false;
      const endAt = record.endAt;
      if (record.state === 'running') {
        const end = this.maximumEnd(record, limits.timeoutMaxMs);
        if (end === undefined) return 'too-long';
        if (requestedEnd > end) requestedEnd = end;
      }
      if (record.state === 'paused') {
        if (this.running() >= limits.sandboxes) throw concurrencyError(limits.sandboxes);
        try {
          await unpauseContainer(record.container);
        } catch (error) {
          if (!/not paused/i.test(dockerMessage(error))) throw error;
        }
        record.state = 'running';
        record.runningSince = new Date();
        record.endAt = requestedEnd;
        resumed = true;
        this.log(`e2b: resumed sandbox ${sandboxId}`);
      } else if (requestedEnd > record.endAt) {
        record.endAt = requestedEnd;
      }
      if (record.endAt !== endAt) await writeEndAt(record.container, record.endAt, this.log);
      this.schedule(sandboxId);
      return { record, resumed };
    });
  }

  /** The latest end a running sandbox may have; undefined once it has run longer than that. */
  private maximumEnd(record: SandboxRecord, timeoutMaxMs: number): Date | undefined {
    const end = record.runningSince.getTime() + timeoutMaxMs;
    return Date.now() > end ? undefined : new Date(end);
  }

  /**
   * Sets a running sandbox's end to now + timeout (shorter or longer), cut to its maximum length;
   * 'missing' for a sandbox that does not run (a paused one is not in the API's store either).
   */
  setTimeout(
    sandboxId: string,
    timeoutSeconds: number,
    timeoutMaxMs: number,
  ): Promise<'set' | 'missing' | 'too-long'> {
    return this.withLock(sandboxId, async (entry) => {
      if (entry?.record.state !== 'running') return 'missing';
      const end = this.maximumEnd(entry.record, timeoutMaxMs);
      if (end === undefined) return 'too-long';
      const requested = new Date(Date.now() + timeoutSeconds * 1000);
      entry.record.endAt = requested > end ? end : requested;
      await writeEndAt(entry.record.container, entry.record.endAt, this.log);
      this.schedule(sandboxId);
      return 'set';
    });
  }

  /** Stops the timers and stops following processes; the containers stay. */
  override close(): void {
    super.close();
    for (const entry of this.entries.values())
      entry.record.processes.detachAll(new ConnectError('the E2B emulator stopped', Code.Unavailable));
  }

  private withLock<T>(sandboxId: string, action: (entry: Entry | undefined) => Promise<T>): Promise<T> {
    const entry = this.entries.get(sandboxId);
    if (!entry) return action(undefined);
    return this.queue(entry, () => action(this.entries.get(sandboxId) === entry ? entry : undefined));
  }

  private async removeEntry(entry: Entry, why: string): Promise<void> {
    const { record } = entry;
    this.disarm(entry);
    this.entries.delete(record.sandboxId);
    // Open process streams end the way a dropped envd connection does.
    record.processes.detachAll(new ConnectError(`sandbox ${record.sandboxId} was killed`, Code.Unavailable));
    try {
      await record.container.remove({ force: true });
    } catch (error) {
      if (dockerStatus(error) !== 404) {
        this.entries.set(record.sandboxId, entry);
        throw error;
      }
    }
    this.log(`e2b: ${why} sandbox ${record.sandboxId}`);
  }

  private async pauseEntry(entry: Entry): Promise<void> {
    this.disarm(entry);
    try {
      await pauseContainer(entry.record.container);
    } catch (error) {
      if (!/already paused/i.test(dockerMessage(error))) throw error;
    }
    entry.record.state = 'paused';
    this.log(`e2b: paused sandbox ${entry.record.sandboxId}`);
  }

  /** Arms the timer that kills (or, with autoPause, pauses) a running sandbox at its end. */
  private schedule(sandboxId: string): void {
    const entry = this.entries.get(sandboxId);
    if (!entry || this.closed) return;
    this.disarm(entry);
    if (entry.record.state !== 'running') return;
    this.arm(
      entry,
      entry.record.endAt.getTime(),
      () =>
        void this.expire(sandboxId).catch((error: unknown) =>
          this.log(`e2b: ending sandbox ${sandboxId} failed: ${dockerMessage(error)}`),
        ),
      () => this.schedule(sandboxId),
    );
  }

  private expire(sandboxId: string): Promise<void> {
    return this.tracked(
      this.withLock(sandboxId, async (entry) => {
        if (entry?.record.state !== 'running' || Date.now() < entry.record.endAt.getTime()) return;
        if (entry.record.autoPause) await this.pauseEntry(entry);
        else await this.removeEntry(entry, 'timed out:');
      }),
    );
  }
}
