import { randomUUID } from 'node:crypto';
import type Docker from 'dockerode';
import { ContainerRegistry, type RegistryEntry } from '../docker/container-registry.js';
import { dockerMessage, dockerStatus } from '../docker/exec.js';
import { nextAutoAction } from './auto-lifecycle.js';
import { DaytonaHttpError } from './errors.js';
import {
  daytonaFilter,
  defaultSettings,
  describedBy,
  readSettings,
  type SandboxDescription,
  type SandboxSettings,
  writeSettings,
} from './labels.js';
import { type CreateSandboxInput, createSandboxContainer } from './sandbox-container.js';
import { ensureAccount, ImageAccounts, type SandboxAccount } from './sandbox-user.js';
import { SessionTable } from './sessions.js';

/** The states the emulator goes through (a subset of Daytona's `SandboxState`). */
export type SandboxState =
  | 'creating'
  | 'starting'
  | 'started'
  | 'stopping'
  | 'stopped'
  | 'archiving'
  | 'archived'
  | 'destroying'
  | 'error';

/** One emulated sandbox: a container plus what Daytona reports about it. */
export interface SandboxRecord extends Readonly<SandboxDescription> {
  readonly container: Docker.Container;
  readonly account: SandboxAccount;
  readonly sessions: SessionTable;
  settings: SandboxSettings;
  state: SandboxState;
  desiredState: 'started' | 'stopped' | 'archived' | 'destroyed';
  errorReason: string | undefined;
  /** When the state last settled (the clock of auto-archive and auto-delete). */
  stateSince: number;
}

type Entry = RegistryEntry<SandboxRecord>;

export interface RegistryOptions {
  docker: Docker;
  instance: string;
  log: (line: string) => void;
  /** Whether sandboxes get a network (see `DaytonaEmulatorOptions.network`). */
  network: boolean;
  /** How long a transitional state (creating, starting, stopping, …) lasts at least, in ms. */
  transitionMs: number;
  /** The length of one minute of the auto-stop/archive/delete intervals, in ms. */
  minuteMs: number;
  /** Told of every state change (`destroyed` when a sandbox is gone). */
  onStateChange?: (
    record: SandboxRecord,
    oldState: SandboxState,
    newState: SandboxState | 'destroyed',
  ) => void;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The sandboxes of one emulator, their containers, and the timers that stop, archive or delete them. */
export class SandboxRegistry extends ContainerRegistry<SandboxRecord> {
  /** The passwd and group files of the images new sandboxes were created from. */
  private readonly imageAccounts = new ImageAccounts();
  /** Toolbox requests under way, per sandbox id (see `busy`). */
  private readonly active = new Map<string, number>();
  /** Stops, archives and deletions accepted and not done yet (see `settle`). */
  private readonly accepted = new Set<Promise<void>>();

  constructor(private readonly options: RegistryOptions) {
    super();
  }

  /** By id, or else by name. */
  get(idOrName: string): SandboxRecord | undefined {
    const byId = this.entries.get(idOrName)?.record;
    if (byId) return byId;
    return this.list().find((record) => record.name === idOrName);
  }

  /** Finds the containers of earlier emulators of this instance and takes them over. */
  async restore(): Promise<void> {
    const { docker } = this.options;
    for (const summary of await this.leftContainers(docker, daytonaFilter(this.options.instance))) {
      const description = describedBy(summary);
      if (!description || this.entries.has(description.id)) continue;
      const container = docker.getContainer(summary.Id);
      try {
        const settings = await readSettings(container, summary, defaultSettings(description.labels));
        const account = await ensureAccount(container, description.user);
        const running = summary.State === 'running';
        const state: SandboxState = running ? 'started' : settings.archived ? 'archived' : 'stopped';
        this.add(container, description, account, settings, state);
        this.options.log(`daytona: restored sandbox ${description.id} (${state})`);
      } catch (error) {
        this.options.log(`daytona: cannot restore sandbox ${description.id}: ${dockerMessage(error)}`);
      }
    }
  }

  /** Creates the container (and the user) now; it starts in the background (`creating` → `started`). */
  async create(input: CreateSandboxInput): Promise<SandboxRecord> {
    const id = randomUUID();
    const name = input.name ?? id;
    if (this.get(name)) throw new DaytonaHttpError(409, `Sandbox with name ${name} already exists`);
    const createdAt = new Date();
    const description: SandboxDescription = {
      id,
      name,
      snapshot: input.snapshot,
      user: input.user,
      target: input.target,
      networkBlockAll: input.networkBlockAll,
      networkAllowList: input.networkAllowList,
      domainAllowList: input.domainAllowList,
      cpu: input.cpu,
      memory: input.memory,
      disk: input.disk,
      createdAt,
      labels: { ...input.labels },
      env: { ...input.env },
    };
    // The settings of its creation go in a label; the state file is written once they change.
    const settings: SandboxSettings = {
      ...defaultSettings(input.labels),
      autoStopInterval: input.autoStopInterval,
      autoArchiveInterval: input.autoArchiveInterval,
      autoDeleteInterval: input.autoDeleteInterval,
    };
    const container = await createSandboxContainer(
      this.options.docker,
      input,
      description,
      this.options.instance,
      settings,
      this.options.network,
    ).catch((error: unknown) => {
      // Say, more CPUs than the host has.
      throw new DaytonaHttpError(400, `cannot create the sandbox's container: ${dockerMessage(error)}`);
    });
    let account: SandboxAccount;
    try {
      account = await ensureAccount(container, input.user, await this.imageAccounts.of(container));
    } catch (error) {
      await container.remove({ force: true }).catch(() => {});
      throw new DaytonaHttpError(400, `cannot set up user ${input.user}: ${dockerMessage(error)}`);
    }
    const entry = this.add(container, description, account, settings, 'creating');
    void this.change(entry.record.id, 'creating', 'started', async (record) => {
      await record.container.start();
    });
    this.options.log(`daytona: creating sandbox ${id} from ${input.image}`);
    return entry.record;
  }

  /**
   * Starts a stopped or archived sandbox (`starting` → `started`); a started one stays as it is. As the
   * API: a failed one is 400, one changing state 409.
   */
  start(idOrName: string): Promise<SandboxRecord> {
    return this.begin(idOrName, (record) => {
      if (record.state === 'started') return false;
      refuseErrored(record);
      if (record.state !== 'stopped' && record.state !== 'archived' && record.state !== 'archiving')
        throw stateConflict();
      void this.change(record.id, 'starting', 'started', async () => {
        try {
          await record.container.start();
        } catch (error) {
          if (dockerStatus(error) !== 304) throw error; // already running
        }
        record.settings.archived = false;
        record.settings.lastActivityAt = new Date().toISOString();
      });
      return true;
    });
  }

  /**
   * Stops a started sandbox (`stopping` → `stopped`); `force` kills instead of SIGTERM. As the API: one
   * changing state is 409, a failed one or one not started (stopped already) 400.
   */
  stop(idOrName: string, force: boolean): Promise<SandboxRecord> {
    return this.begin(idOrName, (record) => {
      refuseErrored(record);
      if (TRANSITIONS.has(record.state)) throw stateConflict();
      if (record.state !== 'started') throw new DaytonaHttpError(400, 'Sandbox is not in a stoppable state');
      this.track(
        this.change(record.id, 'stopping', 'stopped', (current) => this.stopContainer(current, force)),
      );
      return true;
    });
  }

  /**
   * Archives a stopped sandbox (`archiving` → `archived`): the container stays, stopped. As the API: one
   * changing state is 409, any other that is not stopped (archived already) 400.
   */
  archive(idOrName: string): Promise<SandboxRecord> {
    return this.begin(idOrName, (record) => {
      if (TRANSITIONS.has(record.state)) throw stateConflict();
      if (record.state !== 'stopped') throw new DaytonaHttpError(400, 'Sandbox is not stopped');
      this.track(
        this.change(record.id, 'archiving', 'archived', async () => {
          record.settings.archived = true;
        }),
      );
      return true;
    });
  }

  /**
   * Deletes a sandbox (`destroying`, then gone: later requests answer 404). As the API: one changing
   * state (being deleted already too) is 409.
   */
  remove(idOrName: string): Promise<SandboxRecord> {
    return this.begin(idOrName, (record) => {
      if (TRANSITIONS.has(record.state)) throw stateConflict();
      this.track(
        this.change(record.id, 'destroying', 'gone', async (current) => {
          await current.sessions.closeAll();
          try {
            await current.container.remove({ force: true });
          } catch (error) {
            if (dockerStatus(error) !== 404) throw error;
          }
        }),
      );
      return true;
    });
  }

  /**
   * Resolves once every stop, archive and deletion accepted so far is done (their containers stopped
   * or removed), or after `timeoutMs`: an emulator closed right after answering one still completes it.
   */
  async settle(timeoutMs: number): Promise<void> {
    if (this.accepted.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    });
    try {
      await Promise.race([Promise.allSettled([...this.accepted]), expired]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Changes labels or intervals and records them in the container. */
  async update(idOrName: string, change: (settings: SandboxSettings) => void): Promise<SandboxRecord> {
    const record = this.require(idOrName);
    change(record.settings);
    record.settings.updatedAt = new Date().toISOString();
    await writeSettings(record.container, record.settings, this.options.log);
    this.schedule(record.id);
    return record;
  }

  /**
   * Marks a toolbox request under way: the sandbox is active until the returned function is called
   * (its end is activity too), so auto-stop never cuts a request short.
   */
  busy(record: SandboxRecord): () => void {
    this.active.set(record.id, (this.active.get(record.id) ?? 0) + 1);
    this.touch(record);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.active.get(record.id) ?? 1) - 1;
      if (left > 0) this.active.set(record.id, left);
      else this.active.delete(record.id);
      this.touch(record);
    };
  }

  /** Marks activity (toolbox calls, `last-activity`): the auto-stop clock restarts. */
  touch(record: SandboxRecord): void {
    record.settings.lastActivityAt = new Date().toISOString();
    this.schedule(record.id);
  }

  /** The sandbox, or a 404 as Daytona answers it. */
  require(idOrName: string): SandboxRecord {
    const record = this.get(idOrName);
    if (!record) throw new DaytonaHttpError(404, `Sandbox with ID or name ${idOrName} not found`);
    return record;
  }

  private add(
    container: Docker.Container,
    description: SandboxDescription,
    account: SandboxAccount,
    settings: SandboxSettings,
    state: SandboxState,
  ): Entry {
    const record: SandboxRecord = {
      ...description,
      container,
      account,
      sessions: new SessionTable(),
      settings,
      state,
      desiredState: state === 'archived' ? 'archived' : state === 'stopped' ? 'stopped' : 'started',
      errorReason: undefined,
      stateSince: Date.now(),
    };
    const entry = this.register(record.id, record);
    this.schedule(record.id);
    return entry;
  }

  /** Validates and announces a change; `decide` says whether one starts. */
  private async begin(idOrName: string, decide: (record: SandboxRecord) => boolean): Promise<SandboxRecord> {
    // Decided on the state as it is now (not after the changes under way): one in transition is
    // refused with 409, as the API refuses it; the change itself queues behind the others.
    const record = this.require(idOrName);
    decide(record);
    return record;
  }

  /**
   * Puts the sandbox in `interim` now, then (serialised with other changes) performs `action`, waits
   * out the rest of the transition time and settles in `final` ('gone' removes it), or in `error`.
   */
  private change(
    sandboxId: string,
    interim: SandboxState,
    final: SandboxState | 'gone',
    action: (record: SandboxRecord) => Promise<void>,
  ): Promise<void> {
    const entry = this.entries.get(sandboxId);
    if (!entry) return Promise.resolve();
    const { record } = entry;
    this.announce(record, interim);
    record.errorReason = undefined;
    record.desiredState =
      final === 'gone'
        ? 'destroyed'
        : final === 'started' || final === 'stopped' || final === 'archived'
          ? final
          : record.desiredState;
    this.disarm(entry);
    const started = Date.now();
    return this.queue(entry, async () => {
      try {
        await action(record);
        await sleep(Math.max(0, this.options.transitionMs - (Date.now() - started)));
      } catch (error) {
        record.errorReason = dockerMessage(error);
        this.announce(record, 'error');
        this.options.log(`daytona: sandbox ${sandboxId} failed while ${interim}: ${record.errorReason}`);
        return;
      }
      if (final === 'gone') {
        this.entries.delete(sandboxId);
        this.disarm(entry);
        this.options.onStateChange?.(record, record.state, 'destroyed');
        this.options.log(`daytona: deleted sandbox ${sandboxId}`);
        return;
      }
      record.stateSince = Date.now();
      record.settings.updatedAt = new Date().toISOString();
      if (final === 'started') record.settings.lastActivityAt = new Date().toISOString();
      this.announce(record, final);
      this.options.log(`daytona: sandbox ${sandboxId} is ${final}`);
      // A new sandbox's settings are in its labels: the moment it started is not worth a write.
      if (interim !== 'creating') await writeSettings(record.container, record.settings, this.options.log);
      this.schedule(sandboxId);
    });
  }

  /** Keeps an accepted change until it is done, for `settle`. */
  private track(change: Promise<void>): void {
    this.accepted.add(change);
    const done = () => void this.accepted.delete(change);
    change.then(done, done);
  }

  private announce(record: SandboxRecord, state: SandboxState): void {
    const oldState = record.state;
    record.state = state;
    if (oldState !== state) this.options.onStateChange?.(record, oldState, state);
  }

  private async stopContainer(record: SandboxRecord, force: boolean): Promise<void> {
    await record.sessions.closeAll();
    try {
      if (force) await record.container.kill();
      else await record.container.stop({ t: 5 });
    } catch (error) {
      const status = dockerStatus(error);
      if (status !== 304 && status !== 409) throw error; // already stopped
    }
  }

  /** Arms the one timer of a sandbox: auto-stop when started, auto-archive or auto-delete when stopped. */
  private schedule(sandboxId: string): void {
    const entry = this.entries.get(sandboxId);
    if (!entry || this.closed) return;
    this.disarm(entry);
    const due = nextAutoAction(entry.record, this.options.minuteMs);
    if (!due) return;
    const { at, action } = due;
    this.arm(
      entry,
      at,
      () => {
        // A request under way is activity; its end re-arms the clock.
        if (action === 'stop' && this.active.has(sandboxId)) return;
        this.options.log(`daytona: auto-${action} of sandbox ${sandboxId}`);
        const act =
          action === 'stop'
            ? this.stop(sandboxId, false)
            : action === 'archive'
              ? this.archive(sandboxId)
              : this.remove(sandboxId);
        void act.catch((error: unknown) =>
          this.options.log(`daytona: auto-${action} of ${sandboxId} failed: ${dockerMessage(error)}`),
        );
      },
      () => this.schedule(sandboxId),
    );
  }
}

/** States a sandbox is on its way through (the API's `pending`): another change is refused. */
const TRANSITIONS: ReadonlySet<SandboxState> = new Set([
  'creating',
  'starting',
  'stopping',
  'archiving',
  'destroying',
]);

function stateConflict(): DaytonaHttpError {
  return new DaytonaHttpError(409, 'Sandbox state change in progress');
}

function refuseErrored(record: SandboxRecord): void {
  if (record.state === 'error') throw new DaytonaHttpError(400, 'Sandbox is in an errored state');
}
