import { createHash } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import {
  assertDeletableHostDir,
  type CallOptions,
  completeSandbox,
  type GatewayLauncher,
  GatewayLink,
  GatewayMcpConnector,
  GatewaySandbox,
  installGateway,
  type Provider,
  type ProviderOpenOptions,
  type ProviderSession,
  privateHostDir,
  probeNode,
  readGatewayAsset,
  sandboxGatewayLauncher,
  throwIfAborted,
  WsError,
} from '@ws/core';
import Docker from 'dockerode';
import { othersAttached, recordAttachment } from './attachments.js';
import { CONTAINER_WORKDIR, DockerSandbox } from './docker-sandbox.js';

/**
 * How the host reaches the gateway in the container: `unix`, its socket in a bind-mounted host
 * folder; `relay`, a command through the Engine API per request. (The gateway listens on a socket or
 * loopback only, which no published port reaches, so there is no TCP channel.)
 */
export type DockerGatewayChannel = 'unix' | 'relay';

/** Options of {@link DockerProvider}. */
export interface DockerProviderOptions {
  image: string;
  hostWorkdir?: string | undefined;
  volume?: string | undefined;
  env?: Readonly<Record<string, string>> | undefined;
  /** An existing client (never closed by the workspace), or options for a new one. */
  client?: Docker | Docker.DockerOptions | undefined;
  owner?: string | undefined;
  gatewayChannel?: DockerGatewayChannel | undefined;
  hostRuntimeDir?: string | undefined;
  gateway?: boolean | undefined;
}

/** Labels on everything a Docker workspace creates, so orphans can be found and reaped. */
export const LABELS = {
  workspace: 'ws.workspace',
  id: 'ws.workspace.id',
  owner: 'ws.owner',
  created: 'ws.created',
} as const;
const GATEWAY_HOME = '/opt/ws';
const GATEWAY_RUN = '/ws/run';

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

type DockerError = Error & { statusCode?: number; json?: { message?: string } | null };
const statusOf = (error: unknown) => (error as DockerError)?.statusCode;

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
  /** This object's record among the container's users (see attachments.ts). */
  private attachment: string | undefined;
  /** Milliseconds the last open took to create or re-attach the container (before the gateway). */
  attachMs: number | undefined;
  /** Milliseconds the gateway took to install and answer its first health check at the last open. */
  gatewayStartMs: number | undefined;

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
      throw new WsError(
        'BACKEND_UNAVAILABLE',
        `The Docker engine cannot be reached: ${(error as Error).message}`,
        { cause: error },
      );
    }
    await this.detach();
    await privateHostDir(dirname(this.runtimeDir()));
    const runtime = await privateHostDir(this.runtimeDir());
    const shared = await privateHostDir(join(runtime, 'shared'));
    const sockets = await privateHostDir(join(runtime, 'sockets'));
    // Recorded before attaching, so that another object closing meanwhile sees this one.
    this.attachment = await recordAttachment(await privateHostDir(join(runtime, 'users')));
    if (this.options.hostWorkdir !== undefined)
      await mkdir(resolve(this.options.hostWorkdir), { recursive: true, mode: 0o700 });
    const container = await this.attachOrCreate(shared);
    this.container = container;
    this.attachMs = performance.now() - started;
    const sandbox = new DockerSandbox(container, this.name, this.options.env ?? {}, this.runAs);
    if (this.options.gateway === false) return { sandbox, workdir: CONTAINER_WORKDIR };
    const complete = completeSandbox(sandbox);
    const gatewayStarted = performance.now();
    const node = await this.nodeOf(container, complete, runtime, options);
    if (!node) return { sandbox, workdir: CONTAINER_WORKDIR };
    const bundlePath = await installGateway(
      complete,
      GATEWAY_HOME,
      await readGatewayAsset(import.meta.url),
      options,
    );
    const link = new GatewayLink(this.launcher(sandbox, shared, sockets, node.path, bundlePath));
    this.link = link;
    await link.start(options);
    this.gatewayStartMs = performance.now() - gatewayStarted;
    return {
      sandbox: new GatewaySandbox({ direct: sandbox, link, routeExec: true }),
      workdir: CONTAINER_WORKDIR,
      mcp: new GatewayMcpConnector(link),
    };
  }

  private async detach(): Promise<void> {
    const attachment = this.attachment;
    this.attachment = undefined;
    if (attachment) await rm(attachment, { force: true }).catch(() => {});
  }

  /**
   * The container's node (path and version), probed once per container and remembered in the runtime
   * folder, so re-attaching costs no command.
   */
  private async nodeOf(
    container: Docker.Container,
    sandbox: ReturnType<typeof completeSandbox>,
    runtime: string,
    options: CallOptions,
  ): Promise<{ path: string; version: string } | undefined> {
    const { Id } = await container.inspect();
    const cache = join(runtime, 'node.json');
    const remembered = await readFile(cache, 'utf8')
      .then(
        (text) => JSON.parse(text) as { container: string; node: { path: string; version: string } | null },
      )
      .catch(() => undefined);
    if (remembered?.container === Id) return remembered.node ?? undefined;
    const node = await probeNode(sandbox, options);
    await writeFile(cache, JSON.stringify({ container: Id, node: node ?? null }), { mode: 0o600 }).catch(
      () => {},
    );
    return node;
  }

  private async attachOrCreate(shared: string): Promise<Docker.Container> {
    const container = this.docker.getContainer(this.name);
    // While another process creates the container, its name is taken (409) before it can be inspected
    // (404): wait a little and look again.
    for (let attempt = 0; attempt < 50; attempt++) {
      try {
        const info = await container.inspect();
        const labelled = info.Config.Labels?.[LABELS.id];
        if (labelled !== this.workspaceId) {
          throw new WsError(
            'CONFLICT',
            `A container named ${this.name} exists but belongs to ${labelled === undefined ? 'no workspace' : `workspace ${labelled}`}`,
          );
        }
        if (!info.State.Running) {
          await container.start().catch((error: unknown) => {
            // Another process may have started it in the meantime.
            if (statusOf(error) !== 304) throw error;
          });
        }
        return container;
      } catch (error) {
        if (error instanceof WsError) throw error;
        if (statusOf(error) !== 404)
          throw new WsError('BACKEND_ERROR', `Inspecting ${this.name} failed: ${(error as Error).message}`, {
            cause: error,
          });
      }
      try {
        await this.create(shared);
      } catch (error) {
        // 409: another process created the same container first; attach to it on the next round.
        if (statusOf(error) !== 409) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    throw new WsError('CONFLICT', `The container ${this.name} kept changing while being attached`);
  }

  private async create(shared: string): Promise<void> {
    const { image } = this.options;
    try {
      await this.docker.getImage(image).inspect();
    } catch {
      throw new WsError(
        'BACKEND_UNAVAILABLE',
        `The image ${image} is not present in the Docker engine; build one offline with docker/build-image.sh (or docker pull it)`,
        {
          details: { image },
        },
      );
    }
    const binds = [`${shared}:${GATEWAY_RUN}:rw`];
    if (this.options.hostWorkdir !== undefined)
      binds.push(`${resolve(this.options.hostWorkdir)}:${CONTAINER_WORKDIR}:rw`);
    if (this.options.volume !== undefined) binds.push(`${this.options.volume}:${CONTAINER_WORKDIR}:rw`);
    const container = await this.docker.createContainer({
      name: this.name,
      Image: image,
      // PID 1 that exits on SIGTERM, so the container stops at once.
      Cmd: ['sh', '-c', 'trap "exit 0" TERM INT; while :; do sleep 3600 & wait $!; done'],
      WorkingDir: CONTAINER_WORKDIR,
      Labels: {
        [LABELS.workspace]: 'true',
        [LABELS.id]: this.workspaceId,
        [LABELS.owner]: this.options.owner ?? 'ws',
        [LABELS.created]: new Date().toISOString(),
      },
      Env: Object.entries(this.options.env ?? {}).map(([name, value]) => `${name}=${value}`),
      ...(this.runAs ? { User: `${this.runAs.uid}:${this.runAs.gid}` } : {}),
      HostConfig: {
        Binds: binds,
        // Commands run with no capabilities and cannot gain any (setuid binaries included).
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
      },
    });
    await container.start().catch((error: unknown) => {
      // A process attaching meanwhile may have started it already.
      if (statusOf(error) !== 304) throw error;
    });
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

  private launcher(
    sandbox: DockerSandbox,
    shared: string,
    sockets: string,
    node: string,
    bundlePath: string,
  ): GatewayLauncher {
    return sandboxGatewayLauncher({
      // An attached exec: closing its stream (or this process dying) closes the gateway's stdin.
      start: (argv) => sandbox.spawn(argv, { cwd: '/' }),
      node,
      bundle: bundlePath,
      workdir: CONTAINER_WORKDIR,
      socket:
        this.options.gatewayChannel === 'relay'
          ? { kind: 'relay', inside: GATEWAY_RUN, sandbox }
          : { kind: 'pinned', inside: GATEWAY_RUN, shared, pinned: sockets },
    });
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
    await link?.stop().catch(() => {});
    const own = this.attachment;
    const users = join(this.runtimeDir(), 'users');
    // Workspace objects with the same id (in this process or another) share the container: the last
    // one to close removes it.
    const shared = container !== undefined && (await othersAttached(users, own));
    await this.detach();
    if (!container || shared) return;
    await container.remove({ force: true }).catch((error: unknown) => {
      if (statusOf(error) !== 404 && statusOf(error) !== 409)
        throw new WsError('BACKEND_ERROR', `Removing ${this.name} failed: ${(error as Error).message}`, {
          cause: error,
        });
    });
    await rm(this.runtimeDir(), { recursive: true, force: true }).catch(() => {});
  }

  async destroy(options: ProviderOpenOptions): Promise<void> {
    this.identify(options.workspaceId);
    await this.detach();
    await this.docker
      .getContainer(this.name)
      .remove({ force: true })
      .catch(() => {});
    if (this.options.volume !== undefined) {
      await this.docker
        .getVolume(this.options.volume)
        .remove()
        .catch((error: unknown) => {
          if (statusOf(error) !== 404)
            throw new WsError(
              'BACKEND_ERROR',
              `Removing the volume ${this.options.volume} failed: ${(error as Error).message}`,
              { cause: error },
            );
        });
    }
    if (this.options.hostWorkdir !== undefined) {
      await rm(assertDeletableHostDir(this.options.hostWorkdir), { recursive: true, force: true });
    }
  }
}
