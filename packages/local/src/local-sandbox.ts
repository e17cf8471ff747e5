import { constants, createWriteStream } from 'node:fs';
import {
  chmod,
  chown,
  type FileHandle,
  lstat,
  mkdir,
  open,
  readdir,
  readlink,
  rename,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  type DirEntry,
  type ExecOptions,
  type ExecResult,
  type FileOptions,
  type FileStat,
  type FileType,
  type MkdirOptions,
  type ReadStreamOptions,
  type RemoveOptions,
  type Sandbox,
  type SandboxCapabilities,
  type SandboxProcess,
  type SpawnOptions,
  type WriteOptions,
  WsError,
} from '@ws/core';
import {
  fromErrno,
  makeHostDirs,
  ProcessGroups,
  resolveSandboxPath,
  runHostCommand,
  spawnHostProcess,
  temporaryBeside,
  throwIfAborted,
} from '@ws/core/backend';

/** Options of {@link LocalSandbox}. */
export interface LocalSandboxOptions {
  /** Absolute host directory that relative paths and the default cwd resolve against. */
  workdir: string;
  /** Variables added to the host environment for every command. */
  env?: Readonly<Record<string, string>>;
  /** Inherit the host process's environment. Default: true. */
  inheritEnv?: boolean;
}

const DEFAULT_FILE_MODE = 0o644;
const MAX_LINK_HOPS = 40;

/** Where a write to `path` lands: `path` itself, or the end of its chain of symbolic links. */
async function linkDestination(path: string): Promise<string> {
  let current = path;
  for (let hops = 0; hops < MAX_LINK_HOPS; hops++) {
    const info = await lstat(current).catch(() => undefined);
    if (!info?.isSymbolicLink()) return current;
    current = resolve(dirname(current), await readlink(current));
  }
  throw new WsError('INVALID_ARGUMENT', `Too many levels of symbolic links in ${path}`, {
    details: { path },
  });
}

/** A byte stream whose failures (an abort included) are WsErrors. */
async function* typedErrors(
  stream: AsyncIterable<Uint8Array>,
  message: string,
  path: string,
): AsyncGenerator<Uint8Array> {
  try {
    yield* stream;
  } catch (error) {
    throw fromErrno(error, message, { path });
  }
}

/**
 * Opens a file to read it: without blocking on a FIFO that has no writer, and refusing anything but
 * a regular file (`INVALID_ARGUMENT`; a directory is `IS_A_DIRECTORY`). A FIFO, a device or a socket
 * planted in the sandbox would otherwise freeze the reader or fill its memory for ever.
 */
async function openRegular(target: string, what: string): Promise<FileHandle> {
  let handle: FileHandle;
  try {
    handle = await open(target, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    throw fromErrno(error, `${what} failed`, { path: target });
  }
  try {
    const info = await handle.stat();
    if (info.isDirectory())
      throw new WsError('IS_A_DIRECTORY', `${what} failed: it is a directory`, { details: { path: target } });
    if (!info.isFile())
      throw new WsError(
        'INVALID_ARGUMENT',
        `${what} failed: it is not a regular file (a FIFO, device or socket)`,
        { details: { path: target } },
      );
    return handle;
  } catch (error) {
    await handle.close().catch(() => {});
    throw error instanceof WsError ? error : fromErrno(error, `${what} failed`, { path: target });
  }
}

function typeOf(stats: { isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean }): FileType {
  if (stats.isFile()) return 'file';
  if (stats.isDirectory()) return 'directory';
  if (stats.isSymbolicLink()) return 'symlink';
  return 'other';
}

/**
 * The host as a sandbox: commands are host processes (each in its own process group), files are
 * host files. There is no isolation; a relative path means "relative to the workdir".
 */
export class LocalSandbox implements Sandbox {
  readonly backend = 'local';
  readonly workdir: string;
  readonly capabilities: SandboxCapabilities = {
    stat: true,
    list: true,
    remove: true,
    mkdir: true,
    rename: true,
    readStream: true,
    writeStream: true,
    spawn: true,
  };
  private readonly extraEnv: Readonly<Record<string, string>>;
  private readonly inheritEnv: boolean;
  private readonly groups = new ProcessGroups();

  constructor(options: LocalSandboxOptions) {
    this.workdir = options.workdir;
    this.extraEnv = options.env ?? {};
    this.inheritEnv = options.inheritEnv ?? true;
  }

  private resolve(path: string): string {
    return resolveSandboxPath(this.workdir, path);
  }

  private environment(env: Readonly<Record<string, string>> | undefined): NodeJS.ProcessEnv {
    const base = this.inheritEnv ? process.env : {};
    if (!env && Object.keys(this.extraEnv).length === 0) return base;
    return { ...base, ...this.extraEnv, ...env };
  }

  exec(argv: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    return runHostCommand(argv, {
      cwd: options.cwd === undefined ? this.workdir : this.resolve(options.cwd),
      env: this.environment(options.env),
      stdin: options.stdin,
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      onStdout: options.onStdout,
      onStderr: options.onStderr,
      maxOutputBytes: options.maxOutputBytes,
      track: this.groups.track,
    });
  }

  async spawn(argv: readonly string[], options: SpawnOptions = {}): Promise<SandboxProcess> {
    return spawnHostProcess(argv, {
      cwd: options.cwd === undefined ? this.workdir : this.resolve(options.cwd),
      env: this.environment(options.env),
      signal: options.signal,
      track: this.groups.track,
    });
  }

  async readFile(path: string, options: FileOptions = {}): Promise<Uint8Array> {
    throwIfAborted(options.signal);
    const target = this.resolve(path);
    const handle = await openRegular(target, `Reading ${target}`);
    try {
      const data = await handle.readFile(options.signal ? { signal: options.signal } : undefined);
      return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    } catch (error) {
      throw fromErrno(error, `Reading ${target} failed`, { path: target });
    } finally {
      await handle.close().catch(() => {});
    }
  }

  async writeFile(path: string, data: Uint8Array | string, options: WriteOptions = {}): Promise<void> {
    throwIfAborted(options.signal);
    await this.replace(path, options, (temporary, mode) =>
      writeFile(temporary, data, { mode, flag: 'wx', ...(options.signal ? { signal: options.signal } : {}) }),
    );
  }

  /**
   * Writes a file whole or not at all: the bytes go to a new file beside the target (where its links
   * lead), which is renamed over it once complete. A writer killed halfway leaves the target as it was.
   * Without `mode` a replaced file keeps its permission bits (and, for root, its owner).
   */
  private async replace(
    path: string,
    options: WriteOptions,
    write: (temporary: string, mode: number) => Promise<void>,
  ): Promise<void> {
    const requested = this.resolve(path);
    let target = requested;
    try {
      target = await linkDestination(requested);
      const existing = await stat(target).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return undefined;
        throw error;
      });
      if (existing?.isDirectory())
        throw new WsError('IS_A_DIRECTORY', `Writing ${requested} failed: it is a directory`, {
          details: { path: requested },
        });
      const temporary = temporaryBeside(target);
      const mode = options.mode ?? (existing ? existing.mode & 0o7777 : DEFAULT_FILE_MODE);
      try {
        // Before writing: a stream given to a write that fails cannot be read a second time.
        if (!existing) await this.makeParent(target);
        await write(temporary, mode);
        // The creation mode passes through the umask; an explicit or inherited mode must not.
        if (options.mode !== undefined || existing) await chmod(temporary, mode);
        if (existing && process.getuid?.() === 0 && (existing.uid !== 0 || existing.gid !== 0))
          await chown(temporary, existing.uid, existing.gid);
        await rename(temporary, target);
      } catch (error) {
        await rm(temporary, { force: true }).catch(() => {});
        throw error;
      }
    } catch (error) {
      throw fromErrno(error, `Writing ${requested} failed`, { path: requested });
    }
  }

  private async makeParent(target: string): Promise<void> {
    try {
      await makeHostDirs(dirname(target));
    } catch (error) {
      // A file where a parent directory should be: report it as the write's problem.
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
        throw new WsError('NOT_A_DIRECTORY', `A parent of ${target} is not a directory`, {
          cause: error,
          details: { path: target },
        });
      }
      throw error;
    }
  }

  async stat(path: string, options: FileOptions = {}): Promise<FileStat> {
    throwIfAborted(options.signal);
    const target = this.resolve(path);
    try {
      const stats = await stat(target);
      return { type: typeOf(stats), size: stats.size, mtimeMs: stats.mtimeMs, mode: stats.mode & 0o7777 };
    } catch (error) {
      throw fromErrno(error, `stat ${target} failed`, { path: target });
    }
  }

  async list(path: string, options: FileOptions = {}): Promise<DirEntry[]> {
    throwIfAborted(options.signal);
    const target = this.resolve(path);
    let names: string[];
    try {
      names = await readdir(target);
    } catch (error) {
      throw fromErrno(error, `Listing ${target} failed`, { path: target });
    }
    const entries = await Promise.all(
      names.map(async (name): Promise<DirEntry | undefined> => {
        const stats = await lstat(resolveSandboxPath(target, name)).catch(() => undefined);
        // An entry removed between readdir and lstat is simply not there any more.
        if (!stats) return undefined;
        return { name, type: typeOf(stats), size: stats.size, mtimeMs: stats.mtimeMs };
      }),
    );
    return entries.filter((entry): entry is DirEntry => entry !== undefined);
  }

  async remove(path: string, options: RemoveOptions = {}): Promise<void> {
    throwIfAborted(options.signal);
    const target = this.resolve(path);
    if (target === '/') throw new WsError('INVALID_ARGUMENT', 'Refusing to remove /');
    try {
      await rm(target, { recursive: options.recursive ?? false, force: options.force ?? false });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ERR_FS_EISDIR') {
        throw new WsError(
          'IS_A_DIRECTORY',
          `Removing ${target} failed: it is a directory (pass recursive: true)`,
          { cause: error, details: { path: target } },
        );
      }
      throw fromErrno(error, `Removing ${target} failed`, { path: target });
    }
  }

  async mkdir(path: string, options: MkdirOptions = {}): Promise<void> {
    throwIfAborted(options.signal);
    const target = this.resolve(path);
    try {
      if (options.recursive) await makeHostDirs(target);
      else await mkdir(target);
    } catch (error) {
      throw fromErrno(error, `Creating directory ${target} failed`, { path: target });
    }
  }

  async rename(from: string, to: string, options: FileOptions = {}): Promise<void> {
    throwIfAborted(options.signal);
    const source = this.resolve(from);
    const destination = this.resolve(to);
    try {
      await rename(source, destination);
    } catch (error) {
      throw fromErrno(error, `Renaming ${source} to ${destination} failed`, {
        path: source,
        to: destination,
      });
    }
  }

  async readStream(path: string, options: ReadStreamOptions = {}): Promise<AsyncIterable<Uint8Array>> {
    throwIfAborted(options.signal);
    const target = this.resolve(path);
    const handle = await openRegular(target, `Reading ${target}`);
    // The stream owns the handle from here: it closes it when it ends, fails or is let go.
    return typedErrors(
      handle.createReadStream({
        highWaterMark: options.chunkSize ?? 1024 * 1024,
        ...(options.signal ? { signal: options.signal } : {}),
      }),
      `Reading ${target} failed`,
      target,
    );
  }

  async writeStream(
    path: string,
    source: AsyncIterable<Uint8Array>,
    options: WriteOptions = {},
  ): Promise<void> {
    throwIfAborted(options.signal);
    await this.replace(path, options, (temporary, mode) =>
      pipeline(
        Readable.from(source),
        createWriteStream(temporary, { mode, flags: 'wx' }),
        options.signal ? { signal: options.signal } : {},
      ),
    );
  }

  /** Stops every command and process this sandbox started and has not seen exit. */
  async dispose(): Promise<void> {
    await this.groups.stopAll();
  }
}
