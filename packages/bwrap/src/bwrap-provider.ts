import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants, existsSync } from 'node:fs';
import { access, realpath, rename, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve, sep } from 'node:path';
import { promisify } from 'node:util';
import { type CallOptions, WsError } from '@ws/core';
import {
  assertDeletableHostDir,
  completeSandbox,
  hostTag,
  type OwnOptions,
  ownedTempDir,
  type Provider,
  type ProviderOpenOptions,
  type ProviderSession,
  privateHostDir,
  removeTree,
  spawnHostProcess,
  throwIfAborted,
} from '@ws/core/backend';
import {
  GATEWAY_MIN_NODE_MAJOR,
  type GatewayLauncher,
  GatewayLink,
  GatewayMcpConnector,
  GatewaySandbox,
  gatewayBundleName,
  probeNode,
  readGatewayAsset,
  sandboxGatewayLauncher,
} from '@ws/core/gateway';
import type { BubblewrapWorkspaceOptions } from './bubblewrap-workspace.js';
import {
  type CgroupLayout,
  cgroupScope,
  findCgroupLayout,
  joinCgroupArgv,
  WorkspaceCgroup,
} from './bwrap-cgroup.js';
import { type BwrapPolicy, bwrapPolicy, refuseUnavailableLimits } from './bwrap-policy.js';
import {
  BASE_PATH,
  type BwrapMounts,
  BwrapSandbox,
  checkSandboxPath,
  environmentArguments,
  mountArguments,
  SANDBOX_WORKDIR,
  systemMounts,
} from './bwrap-sandbox.js';
import { SandboxInit, STATUS_ARGUMENTS } from './sandbox-init.js';

/** Options of {@link BwrapProvider}: the workspace class's own (documented there). */
export type BwrapProviderOptions = OwnOptions<BubblewrapWorkspaceOptions>;

/** The cgroup controller of each limit. */
const CONTROLLER_OF = { pids: 'pids', memoryMiB: 'memory', cpus: 'cpu' } as const;

const GATEWAY_HOME = '/ws/gateway';
const GATEWAY_RUN = '/ws/run';

/** The runtime folder when none is given: `$XDG_RUNTIME_DIR/ws-bwrap-<uid>`, else the temp folder's. */
export function defaultRuntimeDir(): string {
  return join(process.env.XDG_RUNTIME_DIR || tmpdir(), `ws-bwrap-${process.getuid?.() ?? 0}`);
}

/**
 * The node a sandbox finds first on its PATH, found from the host: the sandbox's system folders are
 * the host's, bound read-only, and its PATH is fixed, so `command -v node` inside names the same host
 * file. Its version is this process's when it is this process's binary, else what it prints (run on
 * the host: a file of the host's own system folders, which no sandbox can write). Saves starting a
 * sandbox (and a node in it) before the gateway can start.
 */
async function systemNode(): Promise<{ path: string; version: string } | undefined> {
  for (const folder of BASE_PATH.split(':')) {
    const path = `${folder}/node`;
    try {
      if (!(await stat(path)).isFile()) continue;
      await access(path, constants.X_OK);
    } catch {
      continue;
    }
    const [real, own] = await Promise.all([realpath(path), realpath(process.execPath)]);
    const version =
      real === own
        ? process.version
        : (await promisify(execFile)(path, ['--version'], { timeout: 15_000 })).stdout.trim();
    const major = Number(/^v(\d+)/.exec(version)?.[1] ?? 0);
    return major >= GATEWAY_MIN_NODE_MAJOR ? { path, version } : undefined;
  }
  return undefined;
}

const healthyBwrap = new Set<string>();

let bundleRead: Promise<{ bundle: Uint8Array; name: string }> | undefined;

/** The gateway bundle this package ships and its content-addressed name, read once per process. */
function gatewayBundle(): Promise<{ bundle: Uint8Array; name: string }> {
  bundleRead ??= readGatewayAsset(import.meta.url).then((bundle) => ({
    bundle,
    name: gatewayBundleName(bundle),
  }));
  // A bundle missing now (not built yet) is looked for again next time.
  bundleRead.catch(() => {
    bundleRead = undefined;
  });
  return bundleRead;
}

/** bwrap runs here and can build a sandbox (user namespaces allowed), or the reason it cannot. */
export function bubblewrapProblem(bwrapPath = 'bwrap'): string | undefined {
  if (process.platform !== 'linux') return `bubblewrap needs Linux, this is ${process.platform}`;
  // Once it has built a sandbox, it can: only a failure is checked again.
  if (healthyBwrap.has(bwrapPath)) return undefined;
  const version = spawnSync(bwrapPath, ['--version'], { encoding: 'utf8' });
  if (version.error || version.status !== 0)
    return `${bwrapPath} is not installed (apt-get install bubblewrap)`;
  const probe = spawnSync(
    bwrapPath,
    [
      '--die-with-parent',
      '--new-session',
      '--unshare-all',
      '--cap-drop',
      'ALL',
      // The system folders only, as a sandbox has them: binding all of / also binds every mount
      // under it, and on a host whose mounts come and go (a Docker engine's containers) that bind
      // can fail for a mount that vanished under it.
      ...systemMounts(),
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      '--',
      'true',
    ],
    {
      encoding: 'utf8',
      timeout: 5_000,
    },
  );
  if (probe.status !== 0)
    return `${bwrapPath} cannot create a sandbox here: ${(probe.stderr || probe.error?.message || '').trim()}`;
  healthyBwrap.add(bwrapPath);
  return undefined;
}

/**
 * Sets up the host directories (workdir, private /tmp, the gateway's runtime directory), checks that
 * bubblewrap works, and starts the gateway in its own bwrap when the sandbox has node.
 */
export class BwrapProvider implements Provider {
  readonly backend = 'bwrap';
  readonly description = 'bubblewrap-sandboxed';
  readonly expectedWorkdir = SANDBOX_WORKDIR;
  readonly isolation = 'namespace' as const;
  readonly mcp = true;
  readonly persistent: boolean;
  /** The host directory bound at /workspace, once open. */
  hostWorkdir: string | undefined;
  private owned: string[] = [];
  private sandbox: BwrapSandbox | undefined;
  private cgroup: WorkspaceCgroup | undefined;
  private link: GatewayLink | undefined;
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

  constructor(
    private readonly options: BwrapProviderOptions,
    private readonly policy: BwrapPolicy = bwrapPolicy(options),
  ) {
    this.persistent = options.hostWorkdir !== undefined;
  }

  /**
   * The workspace's cgroup with its limits, made before anything else. Without cgroups here, limits
   * asked for are refused; a workspace that asked none opens without its default process limit, with
   * a warning.
   */
  private async openCgroup(workspaceId: string, warnings: string[]): Promise<WorkspaceCgroup | undefined> {
    const { policy } = this.policy;
    const found = await findCgroupLayout();
    const noDefault = (why: string) =>
      warnings.push(
        `No process limit: ${why}. A fork bomb in this workspace can use up the host's processes.`,
      );
    if ('problem' in found) {
      refuseUnavailableLimits(policy, [], found.problem);
      noDefault(found.problem);
      return undefined;
    }
    const layout: CgroupLayout = found.layout;
    const available = (Object.keys(CONTROLLER_OF) as (keyof typeof CONTROLLER_OF)[]).filter(
      (limit) => layout.parents[CONTROLLER_OF[limit]] !== undefined,
    );
    refuseUnavailableLimits(
      policy,
      available,
      `the cgroups this host process may use have only the ${available.map((limit) => CONTROLLER_OF[limit]).join(', ')} controllers (the others need root, or a delegated <hierarchy>/ws)`,
    );
    try {
      const scope = cgroupScope(this.options.hostRuntimeDir ?? defaultRuntimeDir());
      const cgroup = await WorkspaceCgroup.create(layout, workspaceId, policy.limits, scope);
      if (!cgroup.limitsProcesses) noDefault("this host's cgroups have no pids controller");
      return cgroup;
    } catch (error) {
      const why = `creating its cgroup failed: ${error instanceof Error ? error.message : String(error)}`;
      refuseUnavailableLimits(policy, [], why);
      noDefault(why);
      return undefined;
    }
  }

  async open(options: ProviderOpenOptions): Promise<ProviderSession> {
    throwIfAborted(options.signal);
    const bwrapPath = this.options.bwrapPath ?? 'bwrap';
    const problem = bubblewrapProblem(bwrapPath);
    if (problem) throw new WsError('BACKEND_UNAVAILABLE', problem);
    const warnings: string[] = [];
    const cgroup = await this.openCgroup(options.workspaceId, warnings);
    this.cgroup = cgroup;
    throwIfAborted(options.signal);
    const oomKills =
      cgroup && this.policy.policy.limits.memoryMiB !== undefined ? () => cgroup.oomKills() : undefined;
    this.owned = [];
    if (this.options.hostWorkdir !== undefined) {
      this.hostWorkdir = resolve(this.options.hostWorkdir);
      await privateHostDir(this.hostWorkdir, { anyOwner: true });
    } else {
      this.hostWorkdir = await ownedTempDir(tmpdir(), `ws-bwrap-${hostTag(options.workspaceId)}-workdir`);
      this.owned.push(this.hostWorkdir);
    }
    const hostTmp = await ownedTempDir(tmpdir(), `ws-bwrap-${hostTag(options.workspaceId)}-tmp`);
    this.owned.push(hostTmp);
    const mounts: BwrapMounts = {
      hostWorkdir: this.hostWorkdir,
      hostTmp,
      shareNet: this.policy.shareNet,
      readOnlyPaths: [...(this.options.readOnlyPaths ?? [])],
      privileges: this.policy.privileges,
    };
    const procs = cgroup?.procs ?? [];
    const sandbox = new BwrapSandbox(mounts, this.options.env ?? {}, bwrapPath, procs);
    this.sandbox = sandbox;
    const plain = { sandbox, workdir: SANDBOX_WORKDIR, warnings, oomKills };
    // Without a gateway, files go through commands (confined to /workspace and /tmp) and MCP is unavailable.
    if (this.options.gateway === false) return plain;
    const node = await systemNode().catch(() => probeNode(completeSandbox(sandbox), options));
    if (!node)
      return {
        ...plain,
        noMcp: `no node 18 or newer is on the sandbox's PATH (the host's system folders); this process runs ${process.execPath}, which the sandbox does not see there: install node in /usr or /usr/local`,
      };
    const launcher = await this.launcher(mounts, node.path, bwrapPath, options.workspaceId, procs);
    const link = new GatewayLink(launcher, options.events);
    this.link = link;
    // Not waited for: file calls go through commands while it starts.
    link.startInBackground();
    return {
      sandbox: new GatewaySandbox({
        direct: sandbox,
        link,
        routeExec: false,
        checkPath: checkSandboxPath,
        awaitStart: true,
      }),
      workdir: SANDBOX_WORKDIR,
      mcp: new GatewayMcpConnector(link),
      warnings,
      oomKills,
    };
  }

  private async launcher(
    mounts: BwrapMounts,
    node: string,
    bwrapPath: string,
    workspaceId: string,
    procs: readonly string[],
  ): Promise<GatewayLauncher> {
    const workdir = this.hostWorkdir!;
    const runtimeDir = resolve(this.options.hostRuntimeDir ?? defaultRuntimeDir());
    const realWorkdir = await realpath(workdir);
    const realRuntime = existsSync(runtimeDir) ? await realpath(runtimeDir) : runtimeDir;
    if (
      realRuntime === realWorkdir ||
      realRuntime.startsWith(realWorkdir + sep) ||
      realWorkdir.startsWith(realRuntime + sep)
    ) {
      throw new WsError(
        'INVALID_ARGUMENT',
        `The runtime directory ${runtimeDir} must not overlap the workdir ${workdir}`,
      );
    }
    await privateHostDir(runtimeDir);
    const home = await privateHostDir(join(runtimeDir, 'gateway'));
    const { bundle, name } = await gatewayBundle();
    if (!existsSync(join(home, name))) {
      const temporary = join(home, `${name}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
      await writeFile(temporary, bundle, { mode: 0o644 });
      await rename(temporary, join(home, name));
    }
    // Host-private: the pinned socket. Only `shared` is bound into the gateway's sandbox, where the
    // gateway creates its socket; the host reads nothing from it.
    const runtime = await ownedTempDir(runtimeDir, `run-${hostTag(workspaceId)}`);
    this.owned.push(runtime);
    const shared = await privateHostDir(join(runtime, 'shared'));
    const sockets = await privateHostDir(join(runtime, 'sockets'));
    return sandboxGatewayLauncher({
      // The gateway's own bwrap, in the workspace's cgroup: the sandbox's mounts, plus the bundle
      // (read-only) and its socket folder.
      start: (argv) =>
        spawnHostProcess(
          joinCgroupArgv(procs, [
            bwrapPath,
            ...STATUS_ARGUMENTS,
            ...mountArguments(mounts, ['--ro-bind', home, GATEWAY_HOME, '--bind', shared, GATEWAY_RUN]),
            ...environmentArguments(this.options.env ?? {}, SANDBOX_WORKDIR),
            '--chdir',
            SANDBOX_WORKDIR,
            '--',
            ...argv,
          ]),
          {
            cwd: workdir,
            env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
            wrapper: new SandboxInit(),
          },
        ),
      node,
      bundle: `${GATEWAY_HOME}/${name}`,
      workdir: SANDBOX_WORKDIR,
      allowedRoots: [SANDBOX_WORKDIR, '/tmp'],
      socket: { kind: 'pinned', inside: GATEWAY_RUN, shared, pinned: sockets },
    });
  }

  async close(): Promise<void> {
    const link = this.link;
    this.link = undefined;
    await link?.stop().catch(() => {});
    await this.sandbox?.dispose();
    this.sandbox = undefined;
    // Once its processes are gone (any left are killed): the next open of the id makes a new one.
    const cgroup = this.cgroup;
    this.cgroup = undefined;
    await cgroup?.remove().catch(() => {});
    // The sandbox wrote in these folders: removing them follows none of the links it may have left.
    for (const path of this.owned.splice(0)) await removeTree(path).catch(() => {});
  }

  async destroy(): Promise<void> {
    if (this.options.hostWorkdir === undefined) return;
    await removeTree(assertDeletableHostDir(this.options.hostWorkdir));
  }
}
