import { Readable } from 'node:stream';
import type { Sandbox } from '@daytonaio/sdk';
import {
  DEFAULT_MAX_OUTPUT_BYTES,
  type ExecOptions,
  type ExecResult,
  type FileOptions,
  type FileStat,
  type ReadStreamOptions,
  type SandboxCapabilities,
  type SandboxProcess,
  type SpawnOptions,
  type WriteOptions,
  WsError,
  type Sandbox as WsSandbox,
} from '@ws/core';
import {
  abortError,
  assertArgv,
  ChunkQueue,
  createExecResult,
  cwdError,
  encodeUtf8,
  enterCwd,
  normalizeInput,
  OutputCollector,
  resolveSandboxPath,
  shellJoin,
  shellQuote,
  throwIfAborted,
  writeThroughTemporary,
} from '@ws/core/backend';
import { translateDaytonaError } from './errors.js';
import type { OutputHandlers } from './log-stream.js';
import { SessionProcess } from './session-process.js';

/**
 * A Daytona sandbox as a sandbox, through the official SDK: each command runs alone in its own
 * session (Daytona's `executeCommand` merges stdout and stderr and takes no input), its output followed
 * over the toolbox's log WebSocket with the two streams apart, as bytes; files through the toolbox's
 * file API (binary-safe), writes through a temporary file renamed over the target.
 */
export class DaytonaSandbox implements WsSandbox {
  readonly backend = 'daytona';
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

  /** Processes started here that have not exited. */
  private readonly running = new Set<SessionProcess>();

  constructor(
    private readonly sandbox: Sandbox,
    readonly workdir: string,
    private readonly env: Readonly<Record<string, string>>,
  ) {}

  /** Kills every process started here that still runs. */
  async killSpawned(): Promise<void> {
    await Promise.all([...this.running].map((process) => process.kill()));
    this.running.clear();
  }

  /** The shell line that runs `argv` in `cwd` with `env`. */
  private commandLine(argv: readonly string[], cwd: string, env: Readonly<Record<string, string>>): string {
    const dir = shellQuote(cwd);
    const exports = Object.entries({ ...this.env, ...env })
      .map(([key, value]) => `export ${shellQuote(`${key}=${value}`)}; `)
      .join('');
    return `${enterCwd(dir)}; ${exports}exec ${shellJoin(argv)}`;
  }

  private async start(
    argv: readonly string[],
    options: { cwd?: string | undefined; env?: Readonly<Record<string, string>> | undefined },
    stdin: boolean,
    handlers: OutputHandlers,
  ): Promise<{ process: SessionProcess; cwd: string }> {
    assertArgv(argv);
    const cwd = options.cwd === undefined ? this.workdir : resolveSandboxPath(this.workdir, options.cwd);
    const line = this.commandLine(argv, cwd, options.env ?? {});
    const process = await SessionProcess.start(this.sandbox, line, stdin, handlers);
    this.running.add(process);
    void process.exited.then(() => this.running.delete(process));
    return { process, cwd };
  }

  async exec(argv: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    throwIfAborted(options.signal);
    const limit = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    const stdout = new OutputCollector(limit);
    const stderr = new OutputCollector(limit);
    // Listeners run in order, one at a time, after the bytes were kept.
    let delivered: Promise<void> = Promise.resolve();
    const deliver =
      (collector: OutputCollector, listener: ExecOptions['onStdout']) => (bytes: Uint8Array) => {
        collector.push(bytes);
        if (listener) delivered = delivered.then(() => listener(bytes)).then(() => {});
      };
    const { process, cwd } = await this.start(argv, options, options.stdin !== undefined, {
      onStdout: deliver(stdout, options.onStdout),
      onStderr: deliver(stderr, options.onStderr),
    });
    let timedOut = false;
    let aborted = false;
    const timer =
      options.timeoutMs !== undefined
        ? setTimeout(() => {
            timedOut = true;
            void process.kill();
          }, options.timeoutMs)
        : undefined;
    const onAbort = () => {
      aborted = true;
      void process.kill();
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    // An abort while the command was starting fired no listener: act on it now.
    if (options.signal?.aborted) onAbort();
    if (options.stdin !== undefined) void this.feed(process, normalizeInput(options.stdin));
    try {
      const { exitCode } = await process.exited;
      await delivered;
      if (aborted) throw abortError(options.signal);
      const badCwd = cwdError(exitCode, stderr.bytes(), cwd);
      if (badCwd) throw badCwd;
      return createExecResult({
        exitCode: timedOut ? -1 : exitCode,
        stdout: stdout.bytes(),
        stderr: stderr.bytes(),
        timedOut,
        truncated: stdout.truncated || stderr.truncated,
      });
    } finally {
      if (timer) clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Streams input to a command's stdin, in order, then closes it. */
  private async feed(process: SessionProcess, input: Uint8Array | AsyncIterable<Uint8Array>): Promise<void> {
    try {
      if (input instanceof Uint8Array) await process.write(input);
      else for await (const chunk of input) await process.write(chunk);
    } catch {
      // The command ended or stopped reading; what it read is its business.
    }
    await process.closeStdin();
  }

  /**
   * A long-lived process, alone in its session: input through the relay (so `closeStdin` is an end
   * of file), output followed over the log WebSocket as it arrives, without back-pressure. `kill`
   * ends the session, which kills the whole process group whatever the signal.
   */
  async spawn(argv: readonly string[], options: SpawnOptions = {}): Promise<SandboxProcess> {
    throwIfAborted(options.signal);
    const stdout = new ChunkQueue(Number.POSITIVE_INFINITY);
    const stderr = new ChunkQueue(Number.POSITIVE_INFINITY);
    const { process } = await this.start(argv, options, true, {
      onStdout: (bytes) => void stdout.push(bytes),
      onStderr: (bytes) => void stderr.push(bytes),
    });
    return SessionProcess.asSandboxProcess(process, stdout, stderr, options.signal);
  }

  /**
   * Starts the gateway (`--stdio`): a spawned process whose stdout is numbered ASCII lines, which the
   * SDK's text decoding carries unchanged.
   */
  spawnGateway(argv: readonly string[], options: SpawnOptions = {}): Promise<SandboxProcess> {
    return this.spawn(argv, options);
  }

  async readFile(path: string, options: FileOptions = {}): Promise<Uint8Array> {
    throwIfAborted(options.signal);
    const target = resolveSandboxPath(this.workdir, path);
    const kind = await this.stat(target, options);
    if (kind.type === 'directory')
      throw new WsError('IS_A_DIRECTORY', `${target}: is a directory`, { details: { path: target } });
    try {
      const buffer = await this.sandbox.fs.downloadFile(target);
      throwIfAborted(options.signal);
      return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    } catch (error) {
      if (options.signal?.aborted) throw abortError(options.signal);
      throw translateDaytonaError(error, `reading ${target}`, target);
    }
  }

  async readStream(path: string, options: ReadStreamOptions = {}): Promise<AsyncIterable<Uint8Array>> {
    const bytes = await this.readFile(path, options);
    return (async function* () {
      yield bytes;
    })();
  }

  /** Describes a path through the toolbox's file details, following symbolic links. */
  async stat(path: string, options: FileOptions = {}): Promise<FileStat> {
    throwIfAborted(options.signal);
    let target = resolveSandboxPath(this.workdir, path);
    for (let hops = 0; hops < 40; hops++) {
      let info: Awaited<ReturnType<Sandbox['fs']['getFileDetails']>>;
      try {
        info = await this.sandbox.fs.getFileDetails(target);
      } catch (error) {
        throw translateDaytonaError(error, `stat ${target}`, target);
      }
      // A link shows as neither a folder nor a regular file (Go's mode string): readlink tells.
      if (!info.isDir && !info.mode.startsWith('-')) {
        const link = await this.exec(['readlink', '--', target], { cwd: '/' });
        if (link.exitCode === 0) {
          const parent = target.slice(0, target.lastIndexOf('/')) || '/';
          target = resolveSandboxPath(parent, link.stdoutText.replace(/\n$/, ''));
          continue;
        }
      }
      return {
        type: info.isDir ? 'directory' : info.mode.startsWith('-') ? 'file' : 'other',
        size: info.size,
        mtimeMs: Date.parse(info.modTime) || 0,
        mode: Number.parseInt(info.permissions, 8) & 0o7777,
      };
    }
    throw new WsError('INVALID_ARGUMENT', `Too many symbolic links in ${path}`);
  }

  /**
   * Writes a file whole or not at all: a command resolves the target's links and makes a temporary
   * file beside it, the toolbox uploads the bytes into it, and a second command gives it the mode and
   * renames it over the target.
   */
  async writeFile(path: string, data: Uint8Array | string, options: WriteOptions = {}): Promise<void> {
    const bytes = typeof data === 'string' ? encodeUtf8(data) : data;
    await this.writeThrough(path, options, (temporary) =>
      this.sandbox.fs.uploadFile(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), temporary),
    );
  }

  /** As {@link writeFile}, the bytes streamed to the toolbox as they come. */
  async writeStream(
    path: string,
    source: AsyncIterable<Uint8Array>,
    options: WriteOptions = {},
  ): Promise<void> {
    await this.writeThrough(path, options, (temporary) =>
      this.sandbox.fs.uploadFileStream(Readable.from(source, { objectMode: false }), temporary),
    );
  }

  private writeThrough(
    path: string,
    options: WriteOptions,
    upload: (temporary: string) => Promise<void>,
  ): Promise<void> {
    return writeThroughTemporary(
      this,
      resolveSandboxPath(this.workdir, path),
      options,
      upload,
      (error, target) => translateDaytonaError(error, `writing ${target}`, target),
    );
  }
}
