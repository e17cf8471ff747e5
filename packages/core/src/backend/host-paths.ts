import { createHash } from 'node:crypto';
import { chmod, link, lstat, mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join, resolve, sep } from 'node:path';
import { fromErrno, WsError } from '../contracts/errors.js';
import type { GatewayChannel } from '../gateway/client.js';

/**
 * Refuses to let a backend delete a host folder that must never go: `/`, the home directory, or the
 * current directory or one of its ancestors. Returns the resolved path.
 * @throws WsError `PERMISSION_DENIED`.
 */
export function assertDeletableHostDir(path: string): string {
  const target = resolve(path);
  const cwd = resolve(process.cwd());
  if (target === '/' || target === homedir() || target === cwd || cwd.startsWith(target + sep)) {
    throw new WsError(
      'PERMISSION_DENIED',
      `Refusing to delete ${target}: it is the root, the home directory or holds the current directory`,
      {
        details: { path: target },
      },
    );
  }
  return target;
}

/**
 * Gives the host a private way to a unix socket that a sandbox created in a folder it can write.
 * The entry `name` of `shared` is hard-linked into `privateDir` (a hard link is made to the entry
 * itself, never to where a symbolic link leads) and must then be a socket: the host connects through
 * the private link, so a link or file planted in the shared folder, or swapped in later, can never
 * point the host at another socket.
 *
 * @returns the private path, or undefined while the socket does not exist yet.
 * @throws WsError `PERMISSION_DENIED` when the entry is not a socket.
 */
export async function pinSandboxSocket(
  shared: string,
  name: string,
  privateDir: string,
): Promise<string | undefined> {
  const pinned = join(privateDir, name);
  await rm(pinned, { force: true });
  try {
    await link(join(shared, name), pinned);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw fromErrno(error, `Reaching the socket ${join(shared, name)} failed`);
  }
  const info = await lstat(pinned);
  if (!info.isSocket()) {
    await rm(pinned, { force: true });
    throw new WsError(
      'PERMISSION_DENIED',
      `${join(shared, name)} is not a socket (a link or file was put there from inside the sandbox); not connecting to it`,
      { details: { path: join(shared, name) } },
    );
  }
  return pinned;
}

/**
 * `mkdir -p` for a host path, one level at a time: Node 20's recursive `mkdir` never settles for a
 * path under a filesystem that refuses new entries (`/proc/nope` hangs it), so a bad workdir, or a
 * link an agent pointed there, would hang the caller. Throws the errno error of the level that
 * failed (`ENOENT`, `EACCES`, `ENOTDIR` when a level is a file).
 */
export async function makeHostDirs(path: string, mode?: number): Promise<void> {
  const missing: string[] = [];
  for (let current = resolve(path); ; ) {
    const info = await stat(current).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    if (info) {
      if (!info.isDirectory())
        throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${current}'`), {
          code: 'ENOTDIR',
          path: current,
          syscall: 'mkdir',
        });
      break;
    }
    missing.push(current);
    const parent = dirname(current);
    if (parent === current) break;
    current = parent;
  }
  for (const dir of missing.reverse()) {
    try {
      await mkdir(dir, mode === undefined ? {} : { mode });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
}

/**
 * Creates a host folder only this user can enter (mode 0700) and checks that it is a real folder of
 * this user, not a link. Its parents are created as needed.
 * `anyOwner` accepts a folder of another user (a workdir the caller named).
 * @throws WsError `PERMISSION_DENIED` when `path` is a link, not a directory, or another user's.
 */
export async function privateHostDir(path: string, options: { anyOwner?: boolean } = {}): Promise<string> {
  await makeHostDirs(path, 0o700);
  const info = await lstat(path);
  if (info.isSymbolicLink() || !info.isDirectory())
    throw new WsError('PERMISSION_DENIED', `${path} must be a directory, not a link`, { details: { path } });
  const uid = process.getuid?.();
  if (!options.anyOwner && uid !== undefined && info.uid !== uid)
    throw new WsError('PERMISSION_DENIED', `${path} belongs to another user (uid ${info.uid})`, {
      details: { path },
    });
  if ((info.mode & 0o777) !== 0o700) await chmod(path, 0o700);
  return path;
}

/**
 * The channel to a gateway that creates its socket `name` in `shared` (a folder the sandbox can
 * write), and the `ready` check of its launch: the socket is pinned into `privateDir` with
 * {@link pinSandboxSocket} once it exists, and the host only ever connects through that pin.
 */
export function pinnedSocketChannel(
  shared: string,
  name: string,
  privateDir: string,
): {
  /** The unix-socket channel to the pinned path `<privateDir>/<name>`. */
  channel: GatewayChannel;
  /** Pins the socket once it exists; resolves `false` while it does not exist yet. */
  ready: () => Promise<boolean>;
} {
  let pinned: string | undefined;
  return {
    channel: { kind: 'unix', socketPath: join(privateDir, name) },
    ready: async () => {
      pinned ??= await pinSandboxSocket(shared, name, privateDir);
      return pinned !== undefined;
    },
  };
}

/** Whether a host process `pid` exists (one of another user counts: signalling it is refused, not failed). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Creates a private host folder `<parent>/<prefix>-<pid>-XXXXXX` for this process, first removing the
 * folders `<prefix>-<pid>-*` in `parent` whose process is gone: what a process killed before it could
 * close left behind. Give each workspace its own prefix (see `hostTag`) so a sweep touches only its own.
 */
export async function ownedTempDir(parent: string, prefix: string): Promise<string> {
  const pattern = new RegExp(`^${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-(\\d+)-`);
  for (const name of await readdir(parent).catch(() => [] as string[])) {
    const owner = pattern.exec(name)?.[1];
    if (owner !== undefined && Number(owner) !== process.pid && !processAlive(Number(owner)))
      await rm(join(parent, name), { recursive: true, force: true }).catch(() => {});
  }
  const path = await mkdtemp(join(parent, `${prefix}-${process.pid}-`));
  await chmod(path, 0o700);
  return path;
}

/** A short, stable tag of a workspace id for host names (files, folders): 12 hex digits of its SHA-256. */
export function hostTag(workspaceId: string): string {
  return createHash('sha256').update(workspaceId).digest('hex').slice(0, 12);
}
