import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { posix } from 'node:path';
import { type Duplex, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DEFAULT_MAX_OUTPUT_BYTES,
  type ExecOptions,
  type ExecResult,
  type FileOptions,
  type FileStat,
  type ProcessExit,
  type ReadStreamOptions,
  type Sandbox,
  type SandboxCapabilities,
  type SandboxProcess,
  type SpawnOptions,
  type WriteOptions,
  WsError,
} from '@ws/core';
import {
  abortError,
  assertArgv,
  ChunkQueue,
  collectBytes,
  createExecResult,
  normalizeInput,
  OutputCollector,
  resolveSandboxPath,
  stopWithGrace,
  temporaryBeside,
  throwIfAborted,
} from '@ws/core/backend';
import type Docker from 'dockerode';
import { statusOf, translateDockerError } from './errors.js';
import { firstTarEntry, type TarOwner, tarOneFile } from './tar.js';

/** The workdir inside the container. */
export const CONTAINER_WORKDIR = '/workspace';
const KILL_GRACE_MS = 2_000;
const MAX_LINK_HOPS = 40;

// Runs the command as the leader of its own session and process group (setsid, from a background job
// so that it is not a group leader already), with the caller's stdin, and writes its pid where a
// timeout or an abort can find it to kill the group. Without setsid only the command itself can be
// killed. $1: cwd, $2: pid file; exit 86: no such cwd, 87: cwd is not a directory.
const WRAPPER = `if ! cd -- "$1" 2>/dev/null; then [ -e "$1" ] && exit 87; exit 86; fi
pidfile=$2; shift 2
exec 3<&0
if command -v setsid >/dev/null 2>&1; then setsid "$@" 0<&3 3<&- & else "$@" 0<&3 3<&- & fi
pid=$!
exec 3<&-
echo "$pid" > "$pidfile"
wait "$pid"; status=$?
rm -f "$pidfile"
exit "$status"`;

// A negative pid names the process group; dash's kill takes no `--` before it. Exit 3: no pid yet
// (the wrapper has not written it, or the process is gone).
const KILL_SCRIPT =
  'p=$(cat "$1" 2>/dev/null); [ -n "$p" ] || exit 3; kill "-$2" "-$p" 2>/dev/null || kill "-$2" "$p" 2>/dev/null; true';
/** How long a signal waits for a just-started command to write its pid. */
const PID_WAIT_MS = 5_000;

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

  /**
   * @param owner who the files it writes belong to (the container's user, when that is not root);
   *   the archive API otherwise makes them root's.
   */
  constructor(
    private readonly container: Docker.Container,
    private readonly name: string,
    private readonly env: Readonly<Record<string, string>>,
    private readonly owner?: TarOwner,
  ) {}

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

  /** Starts `argv` through the wrapper as an attached exec (stdout and stderr, stdin when asked). */
  private async attach(
    argv: readonly string[],
    options: { cwd?: string; env?: Readonly<Record<string, string>>; signal?: AbortSignal },
    withStdin: boolean,
    what: 'exec' | 'spawn',
  ): Promise<{ exec: Docker.Exec; stream: Duplex; pidFile: string; cwd: string }> {
    assertArgv(argv);
    throwIfAborted(options.signal);
    const cwd =
      options.cwd === undefined ? CONTAINER_WORKDIR : resolveSandboxPath(CONTAINER_WORKDIR, options.cwd);
    const pidFile = `/tmp/.ws-${what}-${randomUUID()}.pid`;
    const env = Object.entries({ ...this.env, ...options.env }).map(([name, value]) => `${name}=${value}`);
    try {
      const exec = await this.container.exec({
        Cmd: ['sh', '-c', WRAPPER, 'sh', cwd, pidFile, ...argv],
        AttachStdin: withStdin,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
        ...(env.length > 0 ? { Env: env } : {}),
      });
      const stream = (await exec.start({ hijack: true, stdin: withStdin })) as Duplex;
      return { exec, stream, pidFile, cwd };
    } catch (error) {
      throw await this.translate(error, `${what} ${argv[0]}`);
    }
  }

  async exec(argv: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    const { exec, stream, pidFile, cwd } = await this.attach(
      argv,
      options,
      options.stdin !== undefined,
      'exec',
    );
    let timedOut = false;
    let aborted = false;
    let killed = false;
    let ended: () => void = () => {};
    const streamEnded = new Promise<void>((resolve) => {
      ended = resolve;
    });
    const kill = () => {
      if (killed) return;
      killed = true;
      void stopWithGrace(
        (signal) => this.signalGroup(pidFile, signal, streamEnded),
        streamEnded,
        KILL_GRACE_MS,
      );
    };
    const timer =
      options.timeoutMs !== undefined
        ? setTimeout(() => {
            timedOut = true;
            kill();
          }, options.timeoutMs)
        : undefined;
    const onAbort = () => {
      aborted = true;
      kill();
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    // An abort while the exec was being created and started fired no listener: act on it now.
    if (options.signal?.aborted) onAbort();
    const stdin = options.stdin === undefined ? undefined : normalizeInput(options.stdin);
    if (stdin !== undefined) void this.feed(stream, stdin);
    const limit = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    const stdout = new OutputCollector(limit);
    const stderr = new OutputCollector(limit);
    try {
      await demultiplex(stream, async (channel, chunk) => {
        (channel === 1 ? stdout : stderr).push(chunk);
        const listener = channel === 1 ? options.onStdout : options.onStderr;
        if (listener) await listener(chunk);
      });
      const info = await exec.inspect();
      if (aborted) throw abortError(options.signal);
      const code = info.ExitCode ?? -1;
      if (code === 86 || code === 87) {
        throw new WsError(
          code === 86 ? 'NOT_FOUND' : 'NOT_A_DIRECTORY',
          `The working directory ${cwd} does not exist in the container`,
          { details: { cwd } },
        );
      }
      return createExecResult({
        exitCode: timedOut ? -1 : code,
        stdout: stdout.bytes(),
        stderr: stderr.bytes(),
        timedOut,
        truncated: stdout.truncated || stderr.truncated,
      });
    } catch (error) {
      if (aborted) throw abortError(options.signal);
      throw await this.translate(error, `exec ${argv[0]}`);
    } finally {
      if (timer) clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      stream.destroy();
      ended();
    }
  }

  /** A long-lived process in the container (an attached `exec`), in its own process group. */
  async spawn(argv: readonly string[], options: SpawnOptions = {}): Promise<SandboxProcess> {
    const { exec, stream, pidFile } = await this.attach(argv, options, true, 'spawn');
    const stdout = new ChunkQueue();
    const stderr = new ChunkQueue();
    const exited: Promise<ProcessExit> = demultiplex(stream, (channel, chunk) =>
      (channel === 1 ? stdout : stderr).push(Buffer.from(chunk)),
    )
      .catch(() => {})
      .then(async () => {
        stdout.end();
        stderr.end();
        const info = await exec.inspect().catch(() => undefined);
        return { exitCode: info?.ExitCode ?? -1 };
      });
    const signal = (name: 'TERM' | 'KILL' | 'INT' | 'HUP') => this.signalGroup(pidFile, name, exited);
    const onAbort = () => void signal('KILL');
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.signal?.aborted) onAbort();
    void exited.then(() => options.signal?.removeEventListener('abort', onAbort));
    return {
      pid: undefined,
      stdout: stdout.iterate(),
      stderr: stderr.iterate(),
      write: (chunk: Uint8Array | string) =>
        new Promise<void>((resolve, reject) => {
          stream.write(chunk, (error) =>
            error
              ? reject(new WsError('CONFLICT', 'The process no longer accepts input', { cause: error }))
              : resolve(),
          );
        }),
      closeStdin: async () => {
        stream.end();
      },
      kill: async (name = 'SIGTERM') => {
        const short = name.replace(/^SIG/, '');
        await signal(short === 'KILL' || short === 'INT' || short === 'HUP' ? short : 'TERM');
      },
      exited,
      [Symbol.asyncDispose]: async () => {
        await stopWithGrace(signal, exited, KILL_GRACE_MS);
        await exited;
        stream.destroy();
      },
    };
  }

  private async feed(stream: Duplex, input: Uint8Array | AsyncIterable<Uint8Array>): Promise<void> {
    try {
      if (input instanceof Uint8Array) stream.write(input);
      else {
        for await (const chunk of input) {
          if (!stream.write(chunk)) await new Promise((resolve) => stream.once('drain', resolve));
        }
      }
      stream.end();
    } catch {
      stream.end();
    }
  }

  /**
   * Signals the process group of the command whose wrapper writes `pidFile`. A signal sent right
   * after the start can come before the wrapper wrote the pid: it is sent again until the pid is
   * there, as long as the command has not ended (`ended`).
   */
  private async signalGroup(
    pidFile: string,
    signal: 'TERM' | 'KILL' | 'INT' | 'HUP',
    ended: Promise<unknown>,
  ): Promise<void> {
    let over = false;
    void ended.then(
      () => {
        over = true;
      },
      () => {
        over = true;
      },
    );
    const deadline = Date.now() + PID_WAIT_MS;
    try {
      for (;;) {
        const exec = await this.container.exec({
          Cmd: ['sh', '-c', KILL_SCRIPT, 'sh', pidFile, signal],
          AttachStdout: true,
          AttachStderr: true,
        });
        const stream = (await exec.start({ hijack: true, stdin: false })) as Duplex;
        stream.resume();
        await new Promise((resolve) =>
          stream.once('end', resolve).once('close', resolve).once('error', resolve),
        );
        const { ExitCode } = await exec.inspect();
        if (ExitCode !== 3 || over || Date.now() > deadline) return;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    } catch {
      // The container may be gone; then so is the process.
    }
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
      const commit = await this.prepare(['mv', '-f', '--', temporary, target]);
      const directories = missing.map((_, index) => missing.slice(0, index + 1).join('/'));
      const name = [...missing, posix.basename(temporary)].join('/');
      const mode = options.mode ?? (existing ? existing.mode & 0o7777 : 0o644);
      const archive = tarOneFile(directories, name, size, mode, content, this.owner);
      // The engine gives each entry the owner its header names.
      await this.container.putArchive(Readable.from(archive), { path: base, noOverwriteDirNonDir: true });
      const moved = await commit();
      if (moved.exitCode !== 0) {
        await this.prepare(['rm', '-f', '--', temporary])
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

  /**
   * Creates a plain exec of `argv` now, which fails at once when the container is stopped or gone,
   * and returns what runs it: its exit code and its output (stdout and stderr together).
   */
  private async prepare(
    argv: readonly string[],
  ): Promise<() => Promise<{ exitCode: number; output: string }>> {
    const exec = await this.container.exec({ Cmd: [...argv], AttachStdout: true, AttachStderr: true });
    return async () => {
      const stream = (await exec.start({ hijack: true, stdin: false })) as Duplex;
      const chunks: Buffer[] = [];
      await demultiplex(stream, async (_channel, chunk) => {
        chunks.push(Buffer.from(chunk));
      });
      const info = await exec.inspect();
      return { exitCode: info.ExitCode ?? -1, output: Buffer.concat(chunks).toString('utf8') };
    };
  }
}

/**
 * Reads Docker's multiplexed stream (8-byte headers: the stream number, then the length) and hands
 * each payload to `onFrame`; awaiting it holds the reading back.
 */
export async function demultiplex(
  stream: AsyncIterable<Uint8Array>,
  onFrame: (channel: number, chunk: Uint8Array) => Promise<void>,
): Promise<void> {
  let buffer: Buffer = Buffer.alloc(0);
  for await (const chunk of stream) {
    buffer = buffer.length === 0 ? Buffer.from(chunk) : Buffer.concat([buffer, chunk]);
    while (buffer.length >= 8) {
      const length = buffer.readUInt32BE(4);
      if (buffer.length < 8 + length) break;
      const channel = buffer[0]!;
      const payload = buffer.subarray(8, 8 + length);
      buffer = buffer.subarray(8 + length);
      if (channel === 1 || channel === 2) await onFrame(channel, payload);
    }
  }
}
