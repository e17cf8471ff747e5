import type { CommonWorkspaceOptions, NetworkPolicy, SandboxPolicyOptions } from '@ws/core';
import {
  checkWorkspaceUser,
  type OptionKeys,
  splitOptions,
  WorkspaceEngine,
  type WorkspaceRequester,
} from '@ws/core/backend';
import type Docker from 'dockerode';
import type { DockerGatewayChannel } from './docker-gateway.js';
import { dockerPolicy } from './docker-policy.js';
import { containerName, DockerProvider } from './docker-provider.js';
import {
  DEFAULT_DOCKER_IMAGE,
  type DockerImageResult,
  type EnsureDockerImageOptions,
  ensureDockerImage,
} from './image-build.js';
import type { DockerPullPolicy } from './image-pull.js';

// The image used when none is given: get it with `npx ws-docker-image` or `DockerWorkspace.ensureImage()`.
export { DEFAULT_DOCKER_IMAGE };

/** Options of {@link DockerWorkspace}. */
export interface DockerWorkspaceOptions
  extends CommonWorkspaceOptions,
    Omit<SandboxPolicyOptions, 'network'> {
  /** The image; any image with `sh` works (without `node` there is no gateway and no MCP). Default: {@link DEFAULT_DOCKER_IMAGE}. */
  image?: string;
  /**
   * Whether the opening pulls `image` when the engine does not have it: `missing` (default) pulls it
   * from its registry (the default image from `DEFAULT_DOCKER_IMAGE_SOURCE`, tagged under its own
   * name), reporting progress as `image.progress` events; `never` fails at once. Where it cannot be
   * pulled, the error says in one line how to build it offline (`npx ws-docker-image`).
   */
  pull?: DockerPullPolicy;
  /** Host directory bind-mounted at `/workspace`: files persist on the host. */
  hostWorkdir?: string;
  /** Named volume mounted at `/workspace`: files persist in the volume (`destroy()` removes it). */
  volume?: string;
  /** Variables for the container and every command. */
  env?: Readonly<Record<string, string>>;
  /** An existing dockerode client (never closed here), or options for a new one. Default: the local engine. */
  client?: Docker | Docker.DockerOptions;
  /**
   * The container's network: `'none'` cuts the sandbox off every network (commands, files and MCP
   * servers over stdio still work: the gateway is reached through a socket), `'full'` (default) is the
   * engine's default network (`bridge`, which reaches the internet and the host through the bridge),
   * or a Docker network by name (`'bridge'`, a user-defined network). An allow list is refused with
   * `CAPABILITY_UNSUPPORTED` (Docker cannot filter destinations by itself). Fixed when the container is
   * created.
   */
  network?: NetworkPolicy | 'bridge' | (string & {});
  /**
   * What commands may do. `'hardened'` (default): no capabilities and none gained through setuid
   * programs (`no-new-privileges`); root in the container cannot install packages or change owners.
   * `'standard'`: Docker's default capability set and setuid programs, so `apt-get install` works as
   * root; see docs/SECURITY.md for what that costs. Fixed when the container is created.
   */
  privileges?: SandboxPolicyOptions['privileges'];
  /**
   * What the container may use: `cpus` (NanoCpus), `memoryMiB` (memory, no swap past it: a process
   * past it is killed and the command reports `outOfMemory`), `pids` (default
   * `DEFAULT_PIDS_LIMIT` (2048)), `diskMiB` (the container's writable layer; needs a storage driver
   * that can cap it, else `CAPABILITY_UNSUPPORTED`). Applied to a running container found by name.
   */
  limits?: SandboxPolicyOptions['limits'];
  /** Owner tag put on the container's labels (for reaping orphans). Default: `ws`. */
  owner?: string;
  /**
   * How the host reaches the gateway: `unix` (default), a socket in a host folder bind-mounted into
   * the container; `relay`, a command through the Engine API per request.
   */
  gatewayChannel?: DockerGatewayChannel;
  /** Host folder of the runtime folders (one per container). Default: `$XDG_RUNTIME_DIR` or the temp folder. */
  hostRuntimeDir?: string;
  /** Start the gateway when the image has node 18 or newer. Default: true. */
  gateway?: boolean;
  /**
   * Who commands, file writes and the gateway run as: a user name the image has (its /etc/passwd;
   * one it lacks is refused with `INVALID_ARGUMENT` at `initialize()`), or `uid` / `uid:gid`. It is
   * the container's `Config.User`, and the workdir is handed to it before the container starts.
   * Default: the image's user, except beside a `hostWorkdir` when the host process is not root: then
   * the host's `uid:gid`, so that the host folder's files stay the host user's. There, a `user` of
   * another uid is refused (`INVALID_ARGUMENT`): its files could not be changed or deleted by the
   * host user. Fixed when the container is created: a container found by name that runs as another
   * user is refused with `CONFLICT`.
   */
  user?: string;
  /**
   * Who the container is opened for, put in its labels as `ws.user`, `ws.agent` and `ws.session`
   * (`ws ls` shows them). A `WorkspaceManager` with {@link dockerWorkspaces} passes its request's.
   */
  requester?: WorkspaceRequester;
}

const DOCKER_KEYS: OptionKeys<DockerWorkspaceOptions> = {
  image: true,
  pull: true,
  hostWorkdir: true,
  volume: true,
  env: true,
  client: true,
  network: true,
  limits: true,
  privileges: true,
  owner: true,
  gatewayChannel: true,
  hostRuntimeDir: true,
  gateway: true,
  user: true,
  requester: true,
};

/**
 * A workspace in a Docker container: the container is named after the workspace id and labelled with
 * it, re-attached by name (started if stopped, re-created with the same files if missing), and
 * removed on `close()` (files persist in a bind-mounted host folder or a volume). Tool calls go
 * through the in-container gateway, reached through a unix socket in a bind-mounted host folder, so
 * they cost a fraction of a `docker exec`.
 */
export class DockerWorkspace extends WorkspaceEngine<DockerProvider> {
  /**
   * Makes sure the workspace image is in the Docker engine, so that `open()` can start a container:
   * resolves at once, reporting nothing, when the engine has `image` (default
   * {@link DEFAULT_DOCKER_IMAGE}), whatever built it. The default image, with no `from` or `base`
   * given, is pulled from where the release publishes it (`DEFAULT_DOCKER_IMAGE_SOURCE`) when a
   * registry answers (`pulled: true`). Otherwise builds it as `npx ws-docker-image`
   * does (with `<image>-bare`, the same without node and ripgrep), reporting each progress line
   * (`[12s] step`) to `onProgress`: `from: 'debian'` (default) needs no registry (debootstrap from
   * Debian's mirror; root, debootstrap and the docker CLI), `from: 'dockerfile'` runs `docker build`
   * of the shipped Dockerfile (`FROM node:20-bookworm-slim`: needs a registry; `base` starts it from
   * another image, `nodeVersion` picks the node, see {@link EnsureDockerImageOptions}). A build takes
   * from half a minute up.
   *
   * ```ts
   * await DockerWorkspace.ensureImage({ onProgress: (line) => console.error(line) });
   * await using workspace = await DockerWorkspace.open({ hostWorkdir: './agent-workspace' });
   * ```
   *
   * @returns the image, whether this call built it, its size in bytes and the seconds taken.
   * @throws WsError `INVALID_ARGUMENT` for an unknown option or a bad tag; `BACKEND_UNAVAILABLE` when
   * the engine does not answer or the build's tools are missing (debootstrap, root, docker CLI);
   * `BACKEND_ERROR` when the build fails; `ABORTED` when `signal` fires (the build is stopped).
   */
  static ensureImage(options: EnsureDockerImageOptions = {}): Promise<DockerImageResult> {
    return ensureDockerImage(options);
  }

  /**
   * Checks the options and does no I/O: the workspace starts at `initialize()` (or `open()`).
   * @throws WsError `INVALID_ARGUMENT` for an unknown option (`workdir` names `hostWorkdir`), a
   * malformed limit, network or user, a numeric `user` beside a non-root host's `hostWorkdir` that is
   * not the host's uid, or an unsafe workspace id; `CAPABILITY_UNSUPPORTED` for a network
   * allow list.
   */
  constructor(options: DockerWorkspaceOptions = {}) {
    const { common, own } = splitOptions('DockerWorkspace', options, DOCKER_KEYS);
    const { limits, network, privileges, user, ...rest } = own;
    const policy = dockerPolicy({ limits, network, privileges });
    super({
      ...common,
      provider: new DockerProvider({
        ...rest,
        image: own.image ?? DEFAULT_DOCKER_IMAGE,
        policy,
        user: checkWorkspaceUser('DockerWorkspace', user),
      }),
    });
  }

  /** The container's name. */
  get containerName(): string {
    return containerName(this.id);
  }

  /** Milliseconds the last initialize took to create or re-attach the container. */
  get attachMs(): number | undefined {
    return this.provider.attachMs;
  }

  /** Milliseconds the gateway took to start, once it answered (it starts once the workspace is in use). */
  get gatewayStartMs(): number | undefined {
    return this.provider.gatewayStartMs;
  }

  /**
   * Starts the in-container gateway (MCP, fast calls) if it has not started, and waits for it. It
   * starts by itself once the workspace has had no call for a moment or has made a few (see
   * `DEFERRED_GATEWAY_START`), or at the first MCP server; until then calls go through the Engine
   * API. Resolves with its start time in milliseconds, or undefined when this workspace runs none.
   * @throws WsError `BACKEND_UNAVAILABLE` when it cannot start.
   */
  gatewayReady(options: { signal?: AbortSignal } = {}): Promise<number | undefined> {
    return this.provider.gatewayReady(options);
  }
}
