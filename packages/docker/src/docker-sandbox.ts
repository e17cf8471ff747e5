import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { posix } from 'node:path';
import { type Duplex, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  type ExecOptions,
  type ExecResult,
  type FileOptions,
  type FileStat,
  type ReadStreamOptions,
  type Sandbox,
  type SandboxCapabilities,
  type SandboxProcess,
  type SpawnOptions,
  type WriteOptions,
  WsError,
} from '@ws/core';
import { collectBytes, resolveSandboxPath, temporaryBeside, throwIfAborted } from '@ws/core/backend';
import type Docker from 'dockerode';
import { ContainerExec } from './docker-exec.js';
import { statusOf, translateDockerError } from './errors.js';
import { firstTarEntry, type TarOwner, tarOneFile } from './tar.js';

/** The workdir inside the container. */
export const CONTAINER_WORKDIR = '/workspace';
const MAX_LINK_HOPS = 40;

/** The directory flag of Go's file mode, as the archive API reports it. */
const DIRECTORY_BIT = 0x80000000;

/**
 * A Docker container as a sandbox, through the Engine API: commands with `exec` (hijacked stream,
 * demultiplexed; the exit code from inspect; a timeout or abort kills the process group inside),
 * files with the archive API (binary-safe, streamed, working on stopped containers too).
 */
export class DockerSandbox implements Sandbox {
  readonly backend = 'docker';
  readonly workdir = CONTAINER_WORKDIR;
  readonly capabilities: SandboxCapabilities = {
    stat: true,
    list: false,
    remove: false,
    mkdir: false,
    rename: false,
    readStream: true,
    writeStream: true,
    spawn: true,
  };

  /** Commands in the container. */
  private readonly commands: ContainerExec;

  /**
   * @param owner who the files it writes belong to (the container's user, when that is not root);
   *   the archive API otherwise makes them root's.
   */
  constructor(
    private readonly container: Docker.Container,
    private readonly name: string,
    env: Readonly<Record<string, string>>,
    private readonly owner?: TarOwner,
  ) {
    this.commands = new ContainerExec(container, CONTAINER_WORKDIR, env, (error, what) =>
      this.translate(error, what),
    );
  }

  /** Turns a Docker error into a WsError; a missing container is BACKEND_UNAVAILABLE, never NOT_FOUND. */
  async translate(error: unknown, what: string, path?: string): Promise<WsError> {
    if (error instanceof WsError) return error;
    const status = statusOf(error);
    if (status === 404 || status === 409) {
      const state = await this.container.inspect().then(
        (info) => (info.State.Running ? 'running' : 'stopped'),
        () => 'gone',
      );
      // A missing file of a container that exists (stopped ones too: the archive API works on them) is
      // NOT_FOUND; a container that is gone, or stopped when a command must run, is the backend's loss.
      if (status === 404 && state !== 'gone') {
        return new WsError('NOT_FOUND', `${path ?? what}: no such file or directory`, {
          cause: error,
          details: { path },
        });
      }
      if (state !== 'running') {
        const how = state === 'gone' ? 'gone' : 'stopped';
        return new WsError(
          'BACKEND_UNAVAILABLE',
          `The container ${this.name} is ${how} (${what}); initialize() again to restore it`,
          {
            cause: error,
            details: { container: this.name, lost: true },
          },
        );
      }
    }
    return translateDockerError(error, what, path);
  }

  exec(argv: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    return this.commands.exec(argv, options);
  }

  /** A long-lived process in the container (an attached `exec`), in its own process group. */
  spawn(argv: readonly string[], options: SpawnOptions = {}): Promise<SandboxProcess> {
    return this.commands.spawn(argv, options);
  }

  /**
   * Ends the processes `spawn` started that still run: drops what nobody read of their output and,
   * with `kill`, kills them; without it the caller removes the container they run in.
   */
  endSpawned(kill: boolean): Promise<void> {
    return this.commands.endSpawned(kill);
  }

  async readFile(path: string, options: FileOptions = {}): Promise<Uint8Array> {
    return collectBytes(await this.readStream(path, options));
  }

  /**
   * Streams a file out of the archive API. Read it to the end or stop iterating (which closes it):
   * while the response is open and unread, the engine holds other archive calls on this container.
   */
  async readStream(path: string, options: ReadStreamOptions = {}): Promise<AsyncIterable<Uint8Array>> {
    throwIfAborted(options.signal);
    let target = resolveSandboxPath(CONTAINER_WORKDIR, path);
    for (let hops = 0; hops < 40; hops++) {
      // Ask about the path before fetching it: the engine serialises archive calls on a container,
      // so a HEAD sent while an unread archive response is open would wait for it forever.
      const stat = await this.statHeader(target).catch(() => undefined);
      if (stat?.linkTarget) {
        target = posix.resolve(posix.dirname(target), stat.linkTarget);
        continue;
      }
      let response: NodeJS.ReadableStream;
      try {
        response = await this.container.getArchive({ path: target });
      } catch (error) {
        throw await this.translate(error, `reading ${target}`, target);
      }
      const entry = await firstTarEntry(response as unknown as AsyncIterable<Uint8Array>).catch(
        (error: unknown) => {
          (response as unknown as Duplex).destroy();
          throw error;
        },
      );
      if (entry.type === 'directory') {
        (response as unknown as Duplex).destroy();
        throw new WsError('IS_A_DIRECTORY', `Reading ${target} failed: it is a directory`, {
          details: { path: target },
        });
      }
      return this.typedContent(entry.content, target, options.signal);
    }
    throw new WsError('INVALID_ARGUMENT', `Too many symbolic links in ${path}`);
  }

  /** A file's bytes as they stream, stopped by `signal`, failing with WsErrors only. */
  private async *typedContent(
    content: AsyncIterable<Uint8Array>,
    path: string,
    signal: AbortSignal | undefined,
  ): AsyncGenerator<Uint8Array> {
    try {
      for await (const chunk of content) {
        throwIfAborted(signal);
        yield chunk;
      }
    } catch (error) {
      throw await this.translate(error, `reading ${path}`, path);
    }
  }

  /** Describes a path through the archive API's HEAD (no command runs), following symbolic links. */
  async stat(path: string, options: FileOptions = {}): Promise<FileStat> {
    throwIfAborted(options.signal);
    let target = resolveSandboxPath(CONTAINER_WORKDIR, path);
    for (let hops = 0; hops < 40; hops++) {
      let info: Awaited<ReturnType<DockerSandbox['statHeader']>>;
      try {
        info = await this.statHeader(target);
      } catch (error) {
        throw await this.translate(error, `stat ${target}`, target);
      }
      if (!info)
        throw await this.translate(
          Object.assign(new Error('not found'), { statusCode: 404 }),
          `stat ${target}`,
          target,
        );
      if (info.linkTarget) {
        target = posix.resolve(posix.dirname(target), info.linkTarget);
        continue;
      }
      return {
        type: info.mode & DIRECTORY_BIT ? 'directory' : info.mode & 0x0e000000 ? 'other' : 'file',
        size: info.size,
        mtimeMs: Date.parse(info.mtime),
        mode: info.mode & 0o7777,
      };
    }
    throw new WsError('INVALID_ARGUMENT', `Too many symbolic links in ${path}`);
  }

  /** What the archive API's HEAD says about a path (lstat-like), or undefined when it is missing. */
  private async statHeader(
    path: string,
  ): Promise<{ mode: number; size: number; mtime: string; linkTarget: string } | undefined> {
    try {
      const response = (await this.container.infoArchive({ path })) as unknown as {
        headers: Record<string, string>;
        resume?: () => void;
      };
      response.resume?.();
      const header = response.headers['x-docker-container-path-stat'];
      return header
        ? (JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as {
            mode: number;
            size: number;
            mtime: string;
            linkTarget: string;
          })
        : undefined;
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      // A HEAD answer has no body to say why; the usual cause is a parent that is a file.
      if (statusOf(error) === 500 && path !== '/') {
        const parent = await this.statHeader(posix.dirname(path)).catch(() => undefined);
        if (parent && !(parent.mode & DIRECTORY_BIT) && !parent.linkTarget) {
          throw new WsError('NOT_A_DIRECTORY', `${path}: ${posix.dirname(path)} is not a directory`, {
            cause: error,
            details: { path },
          });
        }
      }
      throw error;
    }
  }

  async writeFile(path: string, data: Uint8Array | string, options: WriteOptions = {}): Promise<void> {
    const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data;
    await this.writeSized(
      path,
      bytes.byteLength,
      (async function* () {
        yield bytes;
      })(),
      options,
    );
  }

  async writeStream(
    path: string,
    source: AsyncIterable<Uint8Array>,
    options: WriteOptions = {},
  ): Promise<void> {
    // The archive announces the size before the bytes: spool the stream to a host file first, so a
    // file of any size passes with flat memory.
    const folder = await mkdtemp(posix.join(tmpdir(), 'ws-docker-spool-'));
    const spool = posix.join(folder, 'data');
    try {
      await pipeline(
        Readable.from(source),
        createWriteStream(spool, { mode: 0o600 }),
        options.signal ? { signal: options.signal } : {},
      );
      const { size } = await stat(spool);
      await this.writeSized(path, size, createReadStream(spool, { highWaterMark: 1024 * 1024 }), options);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  }

  /**
   * Writes a file whole or not at all: the archive API puts the bytes under a new name beside the
   * target (where its links lead), and a `mv` inside the container renames it over the target once
   * the upload is complete. The rename's exec is created before the upload, so a stopped container
   * fails before anything is written. Without a mode a replaced file keeps its permission bits.
   */
  private async writeSized(
    path: string,
    size: number,
    content: AsyncIterable<Uint8Array>,
    options: WriteOptions,
  ): Promise<void> {
    throwIfAborted(options.signal);
    let target = resolveSandboxPath(CONTAINER_WORKDIR, path);
    try {
      let existing = await this.statHeader(target);
      for (let hops = 0; existing?.linkTarget; hops++) {
        if (hops >= MAX_LINK_HOPS)
          throw new WsError('INVALID_ARGUMENT', `Too many symbolic links in ${path}`);
        target = posix.resolve(posix.dirname(target), existing.linkTarget);
        existing = await this.statHeader(target);
      }
      if (existing && existing.mode & DIRECTORY_BIT) {
        throw new WsError('IS_A_DIRECTORY', `Writing ${target} failed: it is a directory`, {
          details: { path: target },
        });
      }
      const { base, missing } = await this.missingFolders(posix.dirname(target), target);
      const temporary = temporaryBeside(target);
      const commit = await this.commands.prepare(['mv', '-f', '--', temporary, target]);
      const directories = missing.map((_, index) => missing.slice(0, index + 1).join('/'));
      const name = [...missing, posix.basename(temporary)].join('/');
      const mode = options.mode ?? (existing ? existing.mode & 0o7777 : 0o644);
      const archive = tarOneFile(directories, name, size, mode, content, this.owner);
      // The engine gives each entry the owner its header names.
      await this.container.putArchive(Readable.from(archive), { path: base, noOverwriteDirNonDir: true });
      const moved = await commit();
      if (moved.exitCode !== 0) {
        await this.commands
          .prepare(['rm', '-f', '--', temporary])
          .then((remove) => remove())
          .catch(() => {});
        throw new WsError('BACKEND_ERROR', `Writing ${target} failed: ${moved.output.trim()}`, {
          details: { path: target },
        });
      }
    } catch (error) {
      throw await this.translate(error, `writing ${target}`, target);
    }
  }

  /**
   * The deepest existing folder at or above `folder`, and the names of the folders below it that an
   * archive must create to make `folder` (outermost first).
   * @throws WsError `NOT_A_DIRECTORY` when a file stands where a folder should be (`path` is named in it).
   */
  private async missingFolders(folder: string, path: string): Promise<{ base: string; missing: string[] }> {
    const missing: string[] = [];
    let base = folder;
    for (;;) {
      const info = await this.statHeader(base);
      if (info) {
        if (!(info.mode & DIRECTORY_BIT) && !info.linkTarget) {
          throw new WsError('NOT_A_DIRECTORY', `${path}: ${base} is not a directory`, { details: { path } });
        }
        return { base, missing };
      }
      missing.unshift(posix.basename(base));
      base = posix.dirname(base);
    }
  }
}
