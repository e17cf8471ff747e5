// The gateway in a Docker container: its bundle placed once on the host and bound read-only into
// each container, the container's node found without running a command, and the launcher that runs
// it over an attached exec.
import { chmod, copyFile, link, lstat, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { WsError } from '@ws/core';
import {
  type GatewayLauncher,
  gatewayBundleName,
  type HostNode,
  sandboxGatewayLauncher,
} from '@ws/core/gateway';
import type Docker from 'dockerode';
import { CONTAINER_WORKDIR, type DockerSandbox } from './docker-sandbox.js';

/**
 * How the host reaches the gateway in the container: `unix`, its socket in a bind-mounted host
 * folder; `relay`, a command through the Engine API per request. (The gateway listens on a socket or
 * loopback only, which no published port reaches, so there is no TCP channel.)
 */
export type DockerGatewayChannel = 'unix' | 'relay';

/** Where the gateway bundle is bound (read-only) in every container. */
export const GATEWAY_HOME = '/opt/ws';
/** Where the container's shared runtime folder is bound: the gateway makes its socket there. */
export const GATEWAY_RUN = '/ws/run';

/**
 * Places the gateway bundle in `<base>/gateway`, the host folder shared by the containers of this
 * runtime base and bound read-only into each: readable by any user in the container (it holds nothing
 * secret), written only by the host, under a content-addressed name. Returns the folder.
 * @throws WsError `PERMISSION_DENIED` when the folder is a link or another user's.
 */
export async function placeGatewayBundle(base: string, bundle: Uint8Array): Promise<string> {
  const home = join(base, 'gateway');
  await mkdir(home, { mode: 0o755 }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error;
  });
  const info = await lstat(home);
  if (!info.isDirectory() || info.uid !== (process.getuid?.() ?? info.uid))
    throw new WsError('PERMISSION_DENIED', `${home} must be a directory of this user, not a link`);
  await chmod(home, 0o755);
  const path = join(home, gatewayBundleName(bundle));
  const present = await stat(path).then(
    (found) => found.size === bundle.byteLength,
    () => false,
  );
  if (!present) {
    const temporary = `${path}.${process.pid}.tmp`;
    await writeFile(temporary, bundle, { mode: 0o644 });
    await rename(temporary, path);
  }
  return home;
}

/**
 * Places the host's node beside the gateway bundle in `<base>/gateway` (bound read-only at
 * {@link GATEWAY_HOME}), for containers whose image has no node: a hard link where the file system
 * allows one, else a copy, under a name carrying its version. Returns its path inside containers.
 */
export async function placeHostNode(base: string, host: HostNode): Promise<string> {
  const home = join(base, 'gateway');
  const path = join(home, host.fileName);
  const size = (await stat(host.path)).size;
  const present = await stat(path).then(
    (found) => found.isFile() && found.size === size,
    () => false,
  );
  if (!present) {
    const temporary = `${path}.${process.pid}.tmp`;
    await rm(temporary, { force: true });
    await link(host.path, temporary).catch(async () => {
      await copyFile(host.path, temporary);
      await chmod(temporary, 0o755);
    });
    await rename(temporary, path);
  }
  return posix.join(GATEWAY_HOME, host.fileName);
}

/** Remembers the node a container's gateway runs on (see {@link containerNode}). */
export async function rememberContainerNode(runtime: string, container: string, node: string): Promise<void> {
  await writeFile(join(runtime, 'node.json'), JSON.stringify({ container, node }), { mode: 0o600 }).catch(
    () => {},
  );
}

/**
 * The container's node, looked up along its PATH through the archive API (no command runs), once
 * per container and remembered in its runtime folder (`node.json`). Its version is not checked here:
 * a node too old for the gateway shows in the gateway's log when it fails to start.
 */
export async function containerNode(
  container: Docker.Container,
  sandbox: DockerSandbox,
  runtime: string,
): Promise<string | undefined> {
  const info = await container.inspect();
  const cache = join(runtime, 'node.json');
  const remembered = await readFile(cache, 'utf8')
    .then((text) => JSON.parse(text) as { container: string; node: string | null })
    .catch(() => undefined);
  if (remembered?.container === info.Id && (typeof remembered.node === 'string' || remembered.node === null))
    return remembered.node ?? undefined;
  const path =
    info.Config.Env?.find((entry) => entry.startsWith('PATH='))?.slice(5) ??
    '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
  const candidates = path
    .split(':')
    .filter((folder) => folder.startsWith('/'))
    .map((folder) => posix.join(folder, 'node'));
  const found = await Promise.all(
    candidates.map((candidate) =>
      sandbox.stat(candidate).then(
        (entry) => (entry.type === 'file' ? candidate : undefined),
        () => undefined,
      ),
    ),
  );
  const node = found.find((candidate) => candidate !== undefined);
  await writeFile(cache, JSON.stringify({ container: info.Id, node: node ?? null }), { mode: 0o600 }).catch(
    () => {},
  );
  return node;
}

/** Where a container's gateway runs from and how it is reached. */
export interface DockerGatewayPlace {
  /** The host folder bound at {@link GATEWAY_RUN} (the gateway's socket folder). */
  readonly shared: string;
  /** The host folder of this process's own links to that socket. */
  readonly sockets: string;
  /** The container's node. */
  readonly node: string;
  /** The bundle's path inside the container. */
  readonly bundlePath: string;
  /** How the host reaches it. Default: `unix`. */
  readonly channel?: DockerGatewayChannel | undefined;
}

/** The launcher of a container's gateway: an attached exec, whose closed stream (or this process dying) closes its stdin. */
export function dockerGatewayLauncher(sandbox: DockerSandbox, place: DockerGatewayPlace): GatewayLauncher {
  return sandboxGatewayLauncher({
    start: (argv) => sandbox.spawn(argv, { cwd: '/' }),
    node: place.node,
    bundle: place.bundlePath,
    workdir: CONTAINER_WORKDIR,
    socket:
      place.channel === 'relay'
        ? { kind: 'relay', inside: GATEWAY_RUN, sandbox }
        : { kind: 'pinned', inside: GATEWAY_RUN, shared: place.shared, pinned: place.sockets },
  });
}
