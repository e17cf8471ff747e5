import { createHash, randomBytes } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Duplex } from 'node:stream';
import {
  assertDeletableHostDir,
  type CallOptions,
  completeSandbox,
  type GatewayChannel,
  type GatewayLauncher,
  GatewayLink,
  GatewayMcpConnector,
  GatewaySandbox,
  installGateway,
  type Provider,
  type ProviderSession,
  probeNode,
  readGatewayAsset,
  readHostFileTail,
  throwIfAborted,
  WsError,
} from '@ws/core';
import Docker from 'dockerode';
import { CONTAINER_WORKDIR, DockerSandbox } from './docker-sandbox.js';

/** How the host reaches the gateway in the container. */
export type DockerGatewayChannel = 'unix' | 'tcp' | 'relay';

/** Options of {@link DockerProvider}. */
export interface DockerProviderOptions {
  workspaceId: string;
  image: string;
  hostWorkdir?: string | undefined;
  volume?: string | undefined;
  env?: Readonly<Record<string, string>> | undefined;
  /** An existing client (never closed by the workspace), or options for a new one. */
  docker?: Docker | Docker.DockerOptions | undefined;
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
const GATEWAY_PORT = 5600;
const LOG_TAIL_BYTES = 4_096;

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
  readonly name: string;
  private readonly docker: Docker;
  private container: Docker.Container | undefined;
  private link: GatewayLink | undefined;
  /** Shows other workspace objects that this one still uses the container when no gateway runs. */
  private lease: { stream: Duplex; file: string } | undefined;
  /** Milliseconds the last open took to create or re-attach the container (before the gateway). */
  attachMs: number | undefined;
  /** Milliseconds the gateway took to install and answer its first health check at the last open. */
  gatewayStartMs: number | undefined;

  constructor(private readonly options: DockerProviderOptions) {
    if (options.hostWorkdir !== undefined && options.volume !== undefined) {
      throw new WsError('INVALID_ARGUMENT', 'Give hostWorkdir or volume, not both');
    }
    this.persistent = options.hostWorkdir !== undefined || options.volume !== undefined;
    this.name = containerName(options.workspaceId);
    this.docker = options.docker instanceof Docker ? options.docker : new Docker(options.docker);
  }

  private runtimeDir(): string {
    const base =
      this.options.hostRuntimeDir ??
      join(process.env.XDG_RUNTIME_DIR || tmpdir(), `ws-docker-${process.getuid?.() ?? 0}`);
    // Short and stable: the same container always binds the same host folder, whoever created it.
    return join(resolve(base), createHash('sha256').update(this.name).digest('hex').slice(0, 16));
  }

  async open(options: CallOptions): Promise<ProviderSession> {
    throwIfAborted(options.signal);
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
    await this.releaseLease();
    const runtime = this.runtimeDir();
    await mkdir(runtime, { recursive: true, mode: 0o700 });
    await chmod(runtime, 0o700);
    if (this.options.hostWorkdir !== undefined)
      await mkdir(resolve(this.options.hostWorkdir), { recursive: true, mode: 0o700 });
    const container = await this.attachOrCreate(runtime);
    this.container = container;
    this.attachMs = performance.now() - started;
    const sandbox = new DockerSandbox(container, this.name, this.options.env ?? {});
    if (this.options.gateway === false) {
      await this.takeLease(container, runtime);
      return { sandbox, workdir: CONTAINER_WORKDIR };
    }
    const complete = completeSandbox(sandbox);
    const gatewayStarted = performance.now();
    const node = await this.nodeOf(container, complete, runtime, options);
    if (!node) {
      await this.takeLease(container, runtime);
      return { sandbox, workdir: CONTAINER_WORKDIR };
    }
    const bundlePath = await installGateway(
      complete,
      GATEWAY_HOME,
      await readGatewayAsset(import.meta.url),
      options,
    );
    const link = new GatewayLink(this.launcher(container, runtime, node.path, bundlePath));
    this.link = link;
    await link.start(options);
    this.gatewayStartMs = performance.now() - gatewayStarted;
    return {
      sandbox: new GatewaySandbox({ direct: sandbox, link, routeExec: true }),
      workdir: CONTAINER_WORKDIR,
      mcp: new GatewayMcpConnector(link),
    };
  }

  /**
   * Marks this object as a user of the container with no gateway to show it: an attached `cat` whose
   * pid sits in the runtime folder. It ends when the connection does, so a host process that dies
   * releases its lease on its own.
   */
  private async takeLease(container: Docker.Container, runtime: string): Promise<void> {
    const name = `lease-${randomBytes(8).toString('hex')}.pid`;
    try {
      const exec = await container.exec({
        Cmd: [
          'sh',
          '-c',
          'echo $$ > "$1" && echo ready && exec cat >/dev/null',
          'sh',
          `${GATEWAY_RUN}/${name}`,
        ],
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
      });
      const stream = (await exec.start({ hijack: true, stdin: true })) as Duplex;
      stream.on('error', () => {});
      await new Promise<void>((ready, failed) => {
        stream.once('data', () => ready());
        stream.once('close', () => failed(new Error('the lease command ended at once')));
      });
      stream.resume();
      this.lease = { stream, file: join(runtime, name) };
    } catch (error) {
      throw await new DockerSandbox(container, this.name, {}).translate(
        error,
        'taking a lease on the container',
      );
    }
  }

  private async releaseLease(): Promise<void> {
    const lease = this.lease;
    this.lease = undefined;
    if (!lease) return;
    await rm(lease.file, { force: true }).catch(() => {});
    lease.stream.destroy();
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

  private async attachOrCreate(runtime: string): Promise<Docker.Container> {
    const container = this.docker.getContainer(this.name);
    // While another process creates the container, its name is taken (409) before it can be inspected
    // (404): wait a little and look again.
    for (let attempt = 0; attempt < 50; attempt++) {
      try {
        const info = await container.inspect();
        const labelled = info.Config.Labels?.[LABELS.id];
        if (labelled !== this.options.workspaceId) {
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
        await this.create(runtime);
      } catch (error) {
        // 409: another process created the same container first; attach to it on the next round.
        if (statusOf(error) !== 409) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    throw new WsError('CONFLICT', `The container ${this.name} kept changing while being attached`);
  }

  private async create(runtime: string): Promise<void> {
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
    const binds = [`${runtime}:${GATEWAY_RUN}:rw`];
    if (this.options.hostWorkdir !== undefined)
      binds.push(`${resolve(this.options.hostWorkdir)}:${CONTAINER_WORKDIR}:rw`);
    if (this.options.volume !== undefined) binds.push(`${this.options.volume}:${CONTAINER_WORKDIR}:rw`);
    const tcp = this.options.gatewayChannel === 'tcp';
    const container = await this.docker.createContainer({
      name: this.name,
      Image: image,
      // PID 1 that exits on SIGTERM, so the container stops at once.
      Cmd: ['sh', '-c', 'trap "exit 0" TERM INT; while :; do sleep 3600 & wait $!; done'],
      WorkingDir: CONTAINER_WORKDIR,
      Labels: {
        [LABELS.workspace]: 'true',
        [LABELS.id]: this.options.workspaceId,
        [LABELS.owner]: this.options.owner ?? 'ws',
        [LABELS.created]: new Date().toISOString(),
      },
      Env: Object.entries(this.options.env ?? {}).map(([name, value]) => `${name}=${value}`),
      ...(tcp ? { ExposedPorts: { [`${GATEWAY_PORT}/tcp`]: {} } } : {}),
      HostConfig: {
        Binds: binds,
        // Published to the host's loopback only, never to other interfaces.
        ...(tcp
          ? { PortBindings: { [`${GATEWAY_PORT}/tcp`]: [{ HostIp: '127.0.0.1', HostPort: '' }] } }
          : {}),
      },
    });
    await container.start().catch((error: unknown) => {
      // A process attaching meanwhile may have started it already.
      if (statusOf(error) !== 304) throw error;
    });
    await container
      .exec({ Cmd: ['mkdir', '-p', CONTAINER_WORKDIR, GATEWAY_HOME] })
      .then((exec) => exec.start({ Detach: true }));
  }

  private launcher(
    container: Docker.Container,
    runtime: string,
    node: string,
    bundlePath: string,
  ): GatewayLauncher {
    const channelKind = this.options.gatewayChannel ?? 'unix';
    let log = join(runtime, 'gateway.log');
    return {
      launch: async ({ token, nonce }) => {
        const tag = nonce.slice(0, 12);
        const socketName = `gateway-${tag}.sock`;
        log = join(runtime, `gateway-${tag}.log`);
        await writeFile(join(runtime, `token-${tag}`), token, { mode: 0o600 });
        const listen =
          channelKind === 'tcp'
            ? ['--port', String(GATEWAY_PORT), '--host', '0.0.0.0']
            : ['--socket', `${GATEWAY_RUN}/${socketName}`];
        const exec = await container.exec({
          Cmd: [
            'sh',
            '-c',
            'exec "$@" >> "$LOG" 2>&1',
            'sh',
            node,
            bundlePath,
            ...listen,
            '--token-file',
            `${GATEWAY_RUN}/token-${tag}`,
            '--nonce',
            nonce,
            '--pid-file',
            `${GATEWAY_RUN}/gateway-${tag}.pid`,
            '--workdir',
            CONTAINER_WORKDIR,
          ],
          Env: [`LOG=${GATEWAY_RUN}/gateway-${tag}.log`],
          AttachStdout: true,
          AttachStderr: true,
        });
        // The attached stream stays open while the gateway lives: its end tells when it exited.
        const stream = (await exec.start({ hijack: true, stdin: false })) as Duplex;
        stream.resume();
        const exited = new Promise<void>((resolveExit) => {
          stream.once('end', () => resolveExit());
          stream.once('close', () => resolveExit());
          stream.once('error', () => resolveExit());
        });
        let channel: GatewayChannel;
        if (channelKind === 'tcp') {
          const info = await container.inspect();
          const port = Number(info.NetworkSettings.Ports?.[`${GATEWAY_PORT}/tcp`]?.[0]?.HostPort);
          if (!port)
            throw new WsError(
              'BACKEND_ERROR',
              `The container ${this.name} publishes no gateway port; create it with gatewayChannel 'tcp'`,
            );
          channel = { kind: 'tcp', port };
        } else if (channelKind === 'relay') {
          channel = {
            kind: 'relay',
            sandbox: new DockerSandbox(container, this.name, {}),
            target: `${GATEWAY_RUN}/${socketName}`,
            node,
          };
        } else {
          channel = { kind: 'unix', socketPath: join(runtime, socketName) };
        }
        return {
          channel,
          exited,
          stop: async () => {
            const pid = await readFile(join(runtime, `gateway-${tag}.pid`), 'utf8').catch(() => '');
            if (pid.trim()) {
              await container
                .exec({ Cmd: ['kill', pid.trim()] })
                .then((kill) => kill.start({ Detach: true }))
                .catch(() => {});
            }
            stream.destroy();
            await rm(join(runtime, socketName), { force: true });
            await rm(join(runtime, `gateway-${tag}.pid`), { force: true });
          },
        };
      },
      logTail: () => readHostFileTail(log, LOG_TAIL_BYTES),
    };
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
    await this.releaseLease();
    if (container && this.options.hostWorkdir !== undefined && process.getuid && process.getuid() !== 0) {
      // Files written in the container belong to its root; hand them back to the host user.
      const owner = `${process.getuid()}:${process.getgid?.() ?? process.getuid()}`;
      await container
        .exec({ Cmd: ['chown', '-R', owner, CONTAINER_WORKDIR] })
        .then((exec) => exec.start({ hijack: true, stdin: false }))
        .then(
          (stream) =>
            new Promise((done) => (stream as Duplex).resume().once('end', done).once('close', done)),
        )
        .catch(() => {});
    }
    // Workspace objects with the same id (in this process or another) share the container: the last
    // one to close removes it. Each of them runs its own gateway or holds a lease, whose pid file
    // shows it is there.
    if (container && (await this.othersAttached(container))) return;
    if (container) {
      await container.remove({ force: true }).catch((error: unknown) => {
        if (statusOf(error) !== 404 && statusOf(error) !== 409)
          throw new WsError('BACKEND_ERROR', `Removing ${this.name} failed: ${(error as Error).message}`, {
            cause: error,
          });
      });
    }
    await rm(this.runtimeDir(), { recursive: true, force: true }).catch(() => {});
  }

  private async othersAttached(container: Docker.Container): Promise<boolean> {
    const pids: string[] = [];
    for (const name of await readdir(this.runtimeDir()).catch(() => [] as string[])) {
      if (!/^(gateway|lease)-[0-9a-f]+\.pid$/.test(name)) continue;
      const pid = (await readFile(join(this.runtimeDir(), name), 'utf8').catch(() => '')).trim();
      if (/^\d+$/.test(pid)) pids.push(pid);
    }
    if (pids.length === 0) return false;
    const sandbox = new DockerSandbox(container, this.name, {});
    const result = await sandbox
      .exec(
        ['sh', '-c', 'for p in "$@"; do kill -0 "$p" 2>/dev/null && exit 0; done; exit 1', 'sh', ...pids],
        { cwd: '/' },
      )
      .catch(() => undefined);
    return result?.exitCode === 0;
  }

  async destroy(): Promise<void> {
    await this.releaseLease();
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
