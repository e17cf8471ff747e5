import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { type CallOptions, isWsError, WsError } from '@ws/core';
import {
  assertDeletableHostDir,
  cgroupOomKills,
  completeSandbox,
  layoutPaths,
  makeHostDirs,
  type OwnOptions,
  type Provider,
  type ProviderOpenOptions,
  type ProviderSession,
  privateHostDir,
  requesterLabels,
  shellQuote,
  throwIfAborted,
  type WorkspaceUser,
  WS_LABELS,
} from '@ws/core/backend';
import {
  DEFERRED_GATEWAY_START,
  GatewayLink,
  GatewayMcpConnector,
  GatewaySandbox,
  type HostNode,
  installGateway,
  type ProvidedNode,
  preparedLauncher,
  provideNode,
  readGatewayAsset,
} from '@ws/core/gateway';
import Docker from 'dockerode';
import { othersAttached, recordAttachment } from './attachments.js';
import {
  containerNode,
  dockerGatewayLauncher,
  GATEWAY_HOME,
  GATEWAY_RUN,
  placeGatewayBundle,
  placeHostNode,
  rememberContainerNode,
} from './docker-gateway.js';
import {
  type DockerPolicy,
  diskLimitRefused,
  matchContainerPolicy,
  policyHostConfig,
  requireDiskLimits,
} from './docker-policy.js';
import { CONTAINER_WORKDIR, DockerSandbox } from './docker-sandbox.js';
import { giveFolder, resolveContainerUser } from './docker-user.js';
import type { DockerWorkspaceOptions } from './docker-workspace.js';
import { engineUnreachable, statusOf, translateDockerError } from './errors.js';
import { obtainImage } from './image-pull.js';

/** Options of {@link DockerProvider}: the workspace class's own (documented there), the image resolved. */
export type DockerProviderOptions = Omit<
  OwnOptions<DockerWorkspaceOptions>,
  'limits' | 'network' | 'privileges' | 'user'
> & {
  image: string;
  policy: DockerPolicy;
  /** The `user` option, checked. */
  user?: WorkspaceUser | undefined;
};

/**
 * Creates the workspace's layout (`data/`, `sessions/`, `skills/.seed/`) in the container's workdir.
 * `skills/` without `.seed` holds skills of the older flat layout, which `initialize()` moves in, so
 * `.seed` is left for it to make.
 */
function layoutScript(): string {
  const { dataDir, skillsDir, skillSeedDir, sessionsDir } = layoutPaths(CONTAINER_WORKDIR);
  const [data, sessions, skills, seed] = [dataDir, sessionsDir, skillsDir, skillSeedDir].map((path) =>
    shellQuote(path),
  );
  return [
    `mkdir -p ${data} ${sessions} 2>/dev/null`,
    `if [ ! -d ${skills} ] || [ -d ${seed} ]; then mkdir -p ${seed} 2>/dev/null; fi`,
  ].join('\n');
}

/**
 * The host folder a Docker workspace keeps its own state in (one per container): under
 * `hostRuntimeDir`, or `$XDG_RUNTIME_DIR` (else the temp folder) `/ws-docker-<uid>`.
 */
export function dockerRuntimeDir(workspaceId: string, hostRuntimeDir?: string): string {
  const base =
    hostRuntimeDir ?? join(process.env.XDG_RUNTIME_DIR || tmpdir(), `ws-docker-${process.getuid?.() ?? 0}`);
  // Short and stable: the same container always binds the same host folder, whoever created it.
  return join(
    resolve(base),
    createHash('sha256').update(containerName(workspaceId)).digest('hex').slice(0, 16),
  );
}

/** The container name of a workspace id: `ws_<id>`, or a sanitised id plus a hash when the id has other characters. */
export function containerName(workspaceId: string): string {
  if (/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,100}$/.test(workspaceId)) return `ws_${workspaceId}`;
  const hash = createHash('sha256').update(workspaceId).digest('hex').slice(0, 12);
  const cleaned = workspaceId.replace(/[^a-zA-Z0-9_.-]/g, '_').slice(0, 60);
  return `ws_${cleaned}_${hash}`;
}

/**
 * Creates or re-attaches the workspace's container (by name, labelled with the id and an owner tag),
 * uploads and starts the gateway when the image has node, and tears the container down on close.
 */
export class DockerProvider implements Provider {
  readonly backend = 'docker';
  readonly description = 'Docker-based';
  readonly expectedWorkdir = CONTAINER_WORKDIR;
  readonly isolation = 'container' as const;
  readonly mcp = true;
  readonly persistent: boolean;
  /** The workspace id and its container's name, once `open` or `destroy` learned them. */
  private identity: { readonly workspaceId: string; readonly name: string } | undefined;
  private readonly docker: Docker;
  private container: Docker.Container | undefined;
  private link: GatewayLink | undefined;
  /** The Engine API sandbox of the attached container (what its own processes were spawned on). */
  private direct: DockerSandbox | undefined;
  /** This object's record among the container's users (see attachments.ts). */
  private attachment: string | undefined;
  /** Milliseconds the last open took to create or re-attach the container (before the gateway). */
  attachMs: number | undefined;
  private bundleBytes: Promise<Uint8Array> | undefined;

  /** Milliseconds the gateway took to start and answer its first health check, once it did. */
  get gatewayStartMs(): number | undefined {
    return this.link?.startedMs;
  }

  /**
   * Waits for the gateway to answer. Resolves with its start time in milliseconds, or undefined when
   * this workspace runs none. @throws WsError `BACKEND_UNAVAILABLE` when it cannot start.
   */
  async gatewayReady(options: CallOptions = {}): Promise<number | undefined> {
    if (!this.link) return undefined;
    await this.link.start(options);
    return this.link.startedMs;
  }

  constructor(private readonly options: DockerProviderOptions) {
    if (options.hostWorkdir !== undefined && options.volume !== undefined) {
      throw new WsError('INVALID_ARGUMENT', 'Give hostWorkdir or volume, not both');
    }
    const channel: unknown = options.gatewayChannel;
    if (channel !== undefined && channel !== 'unix' && channel !== 'relay') {
      throw new WsError(
        'INVALID_ARGUMENT',
        `gatewayChannel ${JSON.stringify(channel)} is not offered: the gateway listens only on a socket or loopback inside the container, which a published port cannot reach. Use 'unix' (the default) or 'relay'`,
        { details: { gatewayChannel: channel } },
      );
    }
    const { user } = options;
    const hostUid = process.getuid?.();
    if (user && 'uid' in user && this.runAs && user.uid !== hostUid)
      throw hostFolderUser(user.text, user.uid, hostUid);
    this.persistent = options.hostWorkdir !== undefined || options.volume !== undefined;
    this.docker = options.client instanceof Docker ? options.client : new Docker(options.client);
  }

  /**
   * The host folder of this container: private to the host (`node.json`, `users/`, `sockets/`) but
   * for `shared/`, bound at /ws/run, where the gateway creates its socket. The host never reads
   * anything in `shared/`; it connects to the socket through a link of its own in `sockets/`.
   */
  private runtimeDir(): string {
    return dockerRuntimeDir(this.workspaceId, this.options.hostRuntimeDir);
  }

  private identify(workspaceId: string): void {
    this.identity = { workspaceId, name: containerName(workspaceId) };
  }

  private get workspaceId(): string {
    if (!this.identity) throw new WsError('NOT_READY', 'The Docker provider is not open');
    return this.identity.workspaceId;
  }

  /** The container's name (known from the first `open` or `destroy`). */
  get name(): string {
    if (!this.identity) throw new WsError('NOT_READY', 'The Docker provider is not open');
    return this.identity.name;
  }

  async open(options: ProviderOpenOptions): Promise<ProviderSession> {
    throwIfAborted(options.signal);
    this.identify(options.workspaceId);
    const started = performance.now();
    try {
      await this.docker.ping();
    } catch (error) {
      throw engineUnreachable(error);
    }
    await requireDiskLimits(this.docker, this.options.policy.policy);
    await this.detach();
    await privateHostDir(dirname(this.runtimeDir()));
    const runtime = await privateHostDir(this.runtimeDir());
    // Handed to the container's user (see handOver) when the host is root.
    const shared = await privateHostDir(join(runtime, 'shared'), {
      anyOwner: this.options.user !== undefined,
    });
    const sockets = await privateHostDir(join(runtime, 'sockets'));
    // Recorded before attaching, so that another object closing meanwhile sees this one.
    this.attachment = await recordAttachment(await privateHostDir(join(runtime, 'users')));
    if (this.options.hostWorkdir !== undefined) await makeHostDirs(resolve(this.options.hostWorkdir), 0o700);
    const { container, created } = await this.attachOrCreate(shared, options);
    this.container = container;
    this.attachMs = performance.now() - started;
    options.events?.({
      type: created ? 'sandbox.created' : 'sandbox.reattached',
      sandboxId: this.name,
      durationMs: this.attachMs,
    });
    const owner = this.options.user
      ? await resolveContainerUser(container, this.options.user, this.options.image)
      : this.runAs;
    const sandbox = new DockerSandbox(container, this.name, this.options.env ?? {}, owner);
    this.direct = sandbox;
    // Read through the Engine API: the gateway may be what the memory limit killed.
    const oomKills =
      this.options.policy.policy.limits.memoryMiB !== undefined ? () => cgroupOomKills(sandbox) : undefined;
    if (this.options.gateway === false) return { sandbox, workdir: CONTAINER_WORKDIR, oomKills };
    const node = await this.gatewayNode(container, sandbox, runtime, options);
    if (node.path === undefined)
      return {
        sandbox,
        workdir: CONTAINER_WORKDIR,
        oomKills,
        noMcp: node.problem,
        warnings: [
          `${node.problem}. Meanwhile commands and files go through the Engine API, and MCP servers cannot run`,
        ],
      };
    const nodePath = node.path;
    const link = new GatewayLink(
      // The bundle goes in at the first launch (placed with the container when this object created
      // it; otherwise one look finds it there).
      preparedLauncher(async ({ signal }) =>
        dockerGatewayLauncher(sandbox, {
          shared,
          sockets,
          node: nodePath,
          bundlePath: await installGateway(
            completeSandbox(sandbox),
            GATEWAY_HOME,
            await this.bundle(),
            signal ? { signal } : {},
          ),
          channel: this.options.gatewayChannel,
        }),
      ),
      options.events,
    );
    this.link = link;
    const warnings: string[] = [];
    let warned = false;
    return {
      // The gateway starts once the workspace is in use; until then the Engine API carries the calls,
      // so a container opened for a command or two pays for no node in it.
      sandbox: new GatewaySandbox({
        direct: sandbox,
        link,
        routeExec: true,
        deferStart: {
          ...DEFERRED_GATEWAY_START,
          failed: (error) => {
            if (warned || (isWsError(error) && error.code === 'DISPOSED')) return;
            warned = true;
            warnings.push(
              `The gateway did not start, so calls go through the Engine API (it is tried again later): ${(error as Error).message}`,
            );
          },
        },
      }),
      workdir: CONTAINER_WORKDIR,
      mcp: new GatewayMcpConnector(link),
      warnings,
      oomKills,
    };
  }

  /**
   * The node the container's gateway runs on: the image's own (found along its PATH without a
   * command), else the host's placed beside the bundle when the container has that folder bound
   * (otherwise uploaded), checked by running it once and remembered for the container.
   */
  private async gatewayNode(
    container: Docker.Container,
    sandbox: DockerSandbox,
    runtime: string,
    options: ProviderOpenOptions,
  ): Promise<ProvidedNode> {
    const own = await containerNode(container, sandbox, runtime);
    if (own) return { path: own, version: '', source: 'sandbox' };
    const info = await container.inspect();
    const bound = info.Mounts.some((mount) => mount.Destination === GATEWAY_HOME);
    const base = dirname(this.runtimeDir());
    const provided = await provideNode(completeSandbox(sandbox), undefined, {
      ...(options.signal ? { signal: options.signal } : {}),
      home: GATEWAY_HOME,
      describe: `the image ${info.Config.Image}`,
      ...(bound ? { place: async (host: HostNode) => void (await placeHostNode(base, host)) } : {}),
    }).catch((error: unknown): ProvidedNode => {
      if (options.signal?.aborted) throw error;
      return {
        problem: `the image ${info.Config.Image} has no node, and placing this host's node failed: ${(error as Error).message}`,
      };
    });
    if (provided.path !== undefined) await rememberContainerNode(runtime, info.Id, provided.path);
    return provided;
  }

  private async detach(): Promise<void> {
    const attachment = this.attachment;
    this.attachment = undefined;
    if (attachment) await rm(attachment, { force: true }).catch(() => {});
  }

  /** The gateway bundle this package ships (read once). */
  private bundle(): Promise<Uint8Array> {
    this.bundleBytes ??= readGatewayAsset(import.meta.url);
    return this.bundleBytes;
  }

  /**
   * Refuses (`CONFLICT`) a container of the workspace's name that carries another workspace id or
   * another owner tag: it is never attached to, started or removed.
   */
  private requireOwned(info: Docker.ContainerInspectInfo): void {
    const labels = info.Config.Labels ?? {};
    const labelled = labels[WS_LABELS.id];
    if (labelled !== this.workspaceId)
      throw new WsError(
        'CONFLICT',
        `A container named ${this.name} exists but belongs to ${labelled === undefined ? 'no workspace' : `workspace ${labelled}`}`,
      );
    const owner = labels[WS_LABELS.owner] ?? '';
    const wanted = this.options.owner ?? 'ws';
    if (owner !== wanted)
      throw new WsError(
        'CONFLICT',
        `The container ${this.name} of workspace id ${JSON.stringify(this.workspaceId)} belongs to owner ${JSON.stringify(owner)}, not ${JSON.stringify(wanted)}; it is left alone (use another workspace id)`,
        { details: { container: this.name, owner, wantedOwner: wanted } },
      );
  }

  private async attachOrCreate(
    shared: string,
    options: ProviderOpenOptions,
  ): Promise<{ container: Docker.Container; created: boolean }> {
    const container = this.docker.getContainer(this.name);
    let created = false;
    // While another process creates the container, its name is taken (409) before it can be inspected
    // (404): wait a little and look again.
    for (let attempt = 0; attempt < 50; attempt++) {
      try {
        const info = await container.inspect();
        this.requireOwned(info);
        await matchContainerPolicy(container, info, this.options.policy);
        this.requireUser(info);
        if (!info.State.Running) {
          await container.start().catch((error: unknown) => {
            // Another process may have started it in the meantime.
            if (statusOf(error) !== 304) throw error;
          });
        }
        return { container, created };
      } catch (error) {
        if (error instanceof WsError) throw error;
        if (statusOf(error) !== 404) throw translateDockerError(error, `inspecting ${this.name}`);
      }
      try {
        await this.create(shared, options);
        created = true;
      } catch (error) {
        // 409: another process created the same container first; attach to it on the next round.
        if (statusOf(error) !== 409) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    throw new WsError('CONFLICT', `The container ${this.name} kept changing while being attached`);
  }

  private async create(shared: string, options: ProviderOpenOptions): Promise<void> {
    const { image } = this.options;
    const events = options.events;
    await obtainImage(this.docker, image, {
      pull: this.options.pull ?? 'missing',
      signal: options.signal,
      progress: events ? (progress) => events({ type: 'image.progress', image, progress }) : undefined,
    }).catch((error: unknown) => {
      throw isWsError(error) ? error : translateDockerError(error, `looking for the image ${image}`);
    });
    const binds = [`${shared}:${GATEWAY_RUN}:rw`];
    // The gateway bundle, from a host folder the container reads but cannot write: nothing to upload.
    if (this.options.gateway !== false)
      binds.push(
        `${await placeGatewayBundle(await privateHostDir(dirname(this.runtimeDir())), await this.bundle())}:${GATEWAY_HOME}:ro`,
      );
    if (this.options.hostWorkdir !== undefined)
      binds.push(`${resolve(this.options.hostWorkdir)}:${CONTAINER_WORKDIR}:rw`);
    if (this.options.volume !== undefined) binds.push(`${this.options.volume}:${CONTAINER_WORKDIR}:rw`);
    const container = await this.docker
      .createContainer({
        name: this.name,
        Image: image,
        // PID 1 lays the workdir out (no command to send for it), then waits, exiting on SIGTERM so the
        // container stops at once.
        Cmd: [
          'sh',
          '-c',
          `${layoutScript()}\ntrap "exit 0" TERM INT; while :; do sleep 3600 & wait $!; done`,
        ],
        WorkingDir: CONTAINER_WORKDIR,
        Labels: {
          [WS_LABELS.workspace]: 'true',
          [WS_LABELS.id]: this.workspaceId,
          [WS_LABELS.owner]: this.options.owner ?? 'ws',
          [WS_LABELS.created]: new Date().toISOString(),
          ...requesterLabels(this.options.requester),
        },
        Env: Object.entries(this.options.env ?? {}).map(([name, value]) => `${name}=${value}`),
        ...(this.containerUser !== undefined ? { User: this.containerUser } : {}),
        // Hardened unless asked otherwise: no capabilities, none gained (setuid binaries included),
        // and a process limit, so a fork bomb exhausts this container only.
        HostConfig: { Binds: binds, ...policyHostConfig(this.options.policy) },
      })
      .catch((error: unknown) => {
        throw diskLimitRefused(error, this.options.policy.policy) ?? error;
      });
    if (this.options.user) await this.handOver(container, this.options.user);
    await container.start().catch((error: unknown) => {
      // A process attaching meanwhile may have started it already.
      if (statusOf(error) !== 304) throw error;
    });
  }

  /**
   * Before the container starts: resolves `user` in the image (a name it lacks is refused) and gives
   * it the workdir and the gateway's socket folder, which the engine does as root through the archive
   * API (the container itself holds no capability to change owners). The container is removed when
   * this fails, so that a corrected `user` can create it again.
   */
  private async handOver(container: Docker.Container, user: WorkspaceUser): Promise<void> {
    try {
      const owner = await resolveContainerUser(container, user, this.options.image);
      const hostUid = process.getuid?.();
      if (this.runAs && owner.uid !== hostUid) throw hostFolderUser(user.text, owner.uid, hostUid);
      await giveFolder(container, CONTAINER_WORKDIR, owner, 0o755);
      // The gateway makes its socket there; a host user other than root could not reach a folder of
      // another uid, so only root hands it over (otherwise it is the host user's, the only uid allowed
      // beside a host folder, or the gateway cannot start: see the option's doc).
      if (hostUid === 0) await giveFolder(container, GATEWAY_RUN, owner, 0o700);
    } catch (error) {
      await container.remove({ force: true }).catch(() => {});
      throw error instanceof WsError
        ? error
        : translateDockerError(error, `preparing ${this.name} for ${user.text}`);
    }
  }

  /**
   * What the container is created with as `Config.User`: the `user` option when given, else the host
   * user (see {@link runAs}), else none (the image's user).
   */
  private get containerUser(): string | undefined {
    if (this.options.user) return this.options.user.text;
    return this.runAs ? `${this.runAs.uid}:${this.runAs.gid}` : undefined;
  }

  /**
   * Refuses (`CONFLICT`) a container found by name that runs as another user than `user` asks: the
   * user of a container cannot change once it is created.
   */
  private requireUser(info: Docker.ContainerInspectInfo): void {
    const asked = this.options.user?.text;
    if (asked === undefined || (info.Config.User ?? '') === asked) return;
    const running = info.Config.User || "the image's user";
    throw new WsError(
      'CONFLICT',
      `The container ${this.name} runs as ${running}, not ${asked}, and a container's user cannot change; open it with the same user, or close it first`,
      { details: { container: this.name, user: info.Config.User ?? '', wantedUser: asked } },
    );
  }

  /**
   * The user the container runs as: a host user other than root, when its files are a host folder,
   * so that what the sandbox writes belongs to that user (root in the container has no capability to
   * hand files over later). Undefined: the image's user.
   */
  private get runAs(): { uid: number; gid: number } | undefined {
    const uid = process.getuid?.();
    if (uid === undefined || uid === 0 || this.options.hostWorkdir === undefined) return undefined;
    return { uid, gid: process.getgid?.() ?? uid };
  }

  /** True while the container exists and runs. */
  async alive(): Promise<boolean> {
    if (!this.container) return false;
    return this.container.inspect().then(
      (info) => info.State.Running,
      () => false,
    );
  }

  async close(): Promise<void> {
    const container = this.container;
    this.container = undefined;
    const link = this.link;
    this.link = undefined;
    const direct = this.direct;
    this.direct = undefined;
    const own = this.attachment;
    const users = join(this.runtimeDir(), 'users');
    // Workspace objects with the same id (in this process or another) share the container: the last
    // one to close removes it, with everything running in it (its gateway is not waited for).
    const shared = container !== undefined && (await othersAttached(users, own));
    await link?.stop({ wait: shared }).catch(() => {});
    // This object's processes end with it: killed in a container another object still uses, else
    // with the container.
    await direct?.endSpawned(shared);
    await this.detach();
    if (!container || shared) return;
    await container.remove({ force: true }).catch((error: unknown) => {
      if (statusOf(error) !== 404 && statusOf(error) !== 409)
        throw translateDockerError(error, `removing ${this.name}`);
    });
    await rm(this.runtimeDir(), { recursive: true, force: true }).catch(() => {});
  }

  async destroy(options: ProviderOpenOptions): Promise<void> {
    this.identify(options.workspaceId);
    await this.detach();
    const container = this.docker.getContainer(this.name);
    const info = await container.inspect().catch((error: unknown) => {
      if (statusOf(error) === 404) return undefined;
      throw translateDockerError(error, `inspecting ${this.name}`);
    });
    // Another workspace's or another owner's container, and the files beside it, are left alone.
    if (info) this.requireOwned(info);
    await container.remove({ force: true }).catch(() => {});
    if (this.options.volume !== undefined) {
      await this.docker
        .getVolume(this.options.volume)
        .remove()
        .catch((error: unknown) => {
          if (statusOf(error) !== 404)
            throw translateDockerError(error, `removing the volume ${this.options.volume}`);
        });
    }
    if (this.options.hostWorkdir !== undefined) {
      await rm(assertDeletableHostDir(this.options.hostWorkdir), { recursive: true, force: true });
    }
  }
}

/**
 * A `user` refused beside a host folder of a host user other than root: what the sandbox writes there
 * would belong to another uid, which the host user can then neither change nor delete.
 */
function hostFolderUser(user: string, uid: number, hostUid: number | undefined): WsError {
  return new WsError(
    'INVALID_ARGUMENT',
    `DockerWorkspace: user ${JSON.stringify(user)} is uid ${uid}, but the files in hostWorkdir must belong to this host user (uid ${hostUid}); leave user out (the container then runs as ${hostUid}) or give that uid`,
    { details: { option: 'user', user, uid, hostUid } },
  );
}
