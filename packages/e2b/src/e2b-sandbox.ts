import {
  DEFAULT_MAX_OUTPUT_BYTES,
  type ExecOptions,
  type ExecResult,
  type FileOptions,
  type FileStat,
  type ProcessExit,
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
  collectBytes,
  createExecResult,
  cwdError,
  encodeUtf8,
  enterCwd,
  mayHaveRun,
  normalizeInput,
  OutputCollector,
  resolveSandboxPath,
  shellJoin,
  shellQuote,
  throwIfAborted,
  writeThroughTemporary,
} from '@ws/core/backend';
import { CommandExitError, type CommandHandle, type Sandbox } from 'e2b';
import { forgetOutput, gatewayOutput } from './command-output.js';
import { translateE2BError } from './errors.js';

/**
 * An E2B sandbox as a sandbox, through the official SDK alone: commands with `commands.run` (in the
 * background, with stdin when there is input, killed on timeout or abort), files with envd's file
 * API (binary-safe), writes through a temporary file renamed over the target.
 *
 * The SDK hands command output over as text (decoded as UTF-8), so output that is not UTF-8 reaches
 * this path with U+FFFD in place of invalid bytes; the workspace runs commands through the gateway,
 * which carries bytes, whenever the sandbox has node.
 */
export class E2BSandbox implements WsSandbox {
  readonly backend = 'e2b';
  readonly capabilities: SandboxCapabilities = {
    stat: true,
    list: false,
    remove: false,
    mkdir: false,
    rename: false,
    readStream: true,
    writeStream: false,
    spawn: true,
  };

  /** Processes started by `spawn` that have not exited. */
  private readonly spawned = new Set<number>();

  /** What every envd call carries: the user it acts as, when one was asked for. */
  private readonly as: { user?: string };

  /** @param user who commands and file operations run as (envd's user); default: the template's. */
  constructor(
    private readonly sandbox: Sandbox,
    readonly workdir: string,
    private readonly env: Readonly<Record<string, string>>,
    user?: string,
  ) {
    this.as = user === undefined ? {} : { user };
  }

  /** Kills every process `spawn` started that still runs. */
  async killSpawned(): Promise<void> {
    await Promise.all([...this.spawned].map((pid) => this.sandbox.commands.kill(pid).catch(() => false)));
    this.spawned.clear();
  }

  /** The shell line that runs `argv` in `cwd` (envd runs it with `bash -l -c`). */
  private commandLine(argv: readonly string[], cwd: string): string {
    const dir = shellQuote(cwd);
    return `${enterCwd(dir)}; exec ${shellJoin(argv)}`;
  }

  private async start(
    argv: readonly string[],
    options: { cwd?: string | undefined; env?: Readonly<Record<string, string>> | undefined },
    handlers: { stdin: boolean; onStdout: (text: string) => void; onStderr: (text: string) => void },
    what: string,
  ): Promise<{ handle: CommandHandle; cwd: string }> {
    assertArgv(argv);
    const cwd = options.cwd === undefined ? this.workdir : resolveSandboxPath(this.workdir, options.cwd);
    let handle: CommandHandle | undefined;
    try {
      handle = await this.sandbox.commands.run(this.commandLine(argv, cwd), {
        ...this.as,
        // The command line enters `cwd` itself; envd's default, the user's home, may not exist
        // (`nobody`'s is /nonexistent) and would fail the command before it runs.
        cwd: '/',
        background: true,
        stdin: handlers.stdin,
        envs: { ...this.env, ...options.env },
        // No time limit of the SDK's: timeouts are this sandbox's, and kill the command.
        timeoutMs: 0,
        onStdout: (text) => {
          handlers.onStdout(text);
          forgetOutput(handle);
        },
        onStderr: (text) => {
          handlers.onStderr(text);
          forgetOutput(handle);
        },
      });
      forgetOutput(handle);
      return { handle, cwd };
    } catch (error) {
      throw mayHaveRun(translateE2BError(error, `${what} ${argv[0]}`));
    }
  }

  async exec(argv: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    throwIfAborted(options.signal);
    const limit = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    const stdout = new OutputCollector(limit);
    const stderr = new OutputCollector(limit);
    // Listeners run in order, one at a time, after the bytes were kept.
    let delivered: Promise<void> = Promise.resolve();
    const deliver = (collector: OutputCollector, listener: ExecOptions['onStdout']) => (text: string) => {
      const bytes = encodeUtf8(text);
      collector.push(bytes);
      if (listener) delivered = delivered.then(() => listener(bytes)).then(() => {});
    };
    const { handle, cwd } = await this.start(
      argv,
      options,
      {
        stdin: options.stdin !== undefined,
        onStdout: deliver(stdout, options.onStdout),
        onStderr: deliver(stderr, options.onStderr),
      },
      'exec',
    );
    let timedOut = false;
    let aborted = false;
    const kill = () => void this.sandbox.commands.kill(handle.pid).catch(() => false);
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
    // An abort while the command was starting fired no listener: act on it now.
    if (options.signal?.aborted) onAbort();
    if (options.stdin !== undefined) void this.feed(handle.pid, normalizeInput(options.stdin));
    try {
      let exitCode: number;
      try {
        exitCode = (await handle.wait()).exitCode;
      } catch (error) {
        if (!(error instanceof CommandExitError)) throw error;
        exitCode = error.exitCode;
      }
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
    } catch (error) {
      if (aborted) throw abortError(options.signal);
      throw mayHaveRun(translateE2BError(error, `exec ${argv[0]}`));
    } finally {
      if (timer) clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Streams input to a command's stdin, one request at a time (in order), then closes it. */
  private async feed(pid: number, input: Uint8Array | AsyncIterable<Uint8Array>): Promise<void> {
    const maxChunk = 1024 * 1024;
    const send = async (bytes: Uint8Array) => {
      for (let offset = 0; offset < bytes.byteLength; offset += maxChunk)
        await this.sandbox.commands.sendStdin(pid, bytes.subarray(offset, offset + maxChunk));
    };
    try {
      if (input instanceof Uint8Array) await send(input);
      else for await (const chunk of input) await send(chunk);
    } catch {
      // The command ended or stopped reading; what it read is its business.
    }
    await this.sandbox.commands.closeStdin(pid).catch(() => {});
  }

  /**
   * A long-lived process (`commands.run` in the background with stdin). Its output has no
   * back-pressure through the SDK: it is queued as it arrives. Only SIGKILL reaches it (the SDK's
   * one signal).
   */
  async spawn(argv: readonly string[], options: SpawnOptions = {}): Promise<SandboxProcess> {
    throwIfAborted(options.signal);
    const stdout = new ChunkQueue(Number.POSITIVE_INFINITY);
    const stderr = new ChunkQueue(Number.POSITIVE_INFINITY);
    const { handle } = await this.start(
      argv,
      options,
      {
        stdin: true,
        onStdout: (text) => void stdout.push(encodeUtf8(text)),
        onStderr: (text) => void stderr.push(encodeUtf8(text)),
      },
      'spawn',
    );
    this.spawned.add(handle.pid);
    const exited: Promise<ProcessExit> = handle.wait().then(
      (result) => ({ exitCode: result.exitCode }),
      (error: unknown) => ({ exitCode: error instanceof CommandExitError ? error.exitCode : -1 }),
    );
    void exited.then(() => {
      this.spawned.delete(handle.pid);
      stdout.end();
      stderr.end();
    });
    return this.processOf(handle.pid, stdout, stderr, exited, options.signal);
  }

  /** The {@link SandboxProcess} of a command started in the background with stdin. */
  private processOf(
    pid: number,
    stdout: ChunkQueue,
    stderr: ChunkQueue,
    exited: Promise<ProcessExit>,
    signal: AbortSignal | undefined,
  ): SandboxProcess {
    const kill = async () => {
      await this.sandbox.commands.kill(pid).catch(() => false);
    };
    const onAbort = () => void kill();
    signal?.addEventListener('abort', onAbort, { once: true });
    // An abort while the command was starting fired no listener: act on it now.
    if (signal?.aborted) onAbort();
    void exited.then(() => signal?.removeEventListener('abort', onAbort));
    // Writes go one at a time, so they arrive in order.
    let writing: Promise<void> = Promise.resolve();
    return {
      pid,
      stdout: stdout.iterate(),
      stderr: stderr.iterate(),
      write: (chunk) => {
        const bytes = typeof chunk === 'string' ? encodeUtf8(chunk) : chunk;
        const next = writing.then(() => this.sandbox.commands.sendStdin(pid, bytes));
        writing = next.catch(() => {});
        return next.catch((error: unknown) => {
          throw new WsError('CONFLICT', 'The process no longer accepts input', { cause: error });
        });
      },
      closeStdin: async () => {
        await writing;
        await this.sandbox.commands.closeStdin(pid).catch(() => {});
      },
      kill: async () => kill(),
      exited,
      [Symbol.asyncDispose]: async () => {
        await kill();
        await exited;
      },
    };
  }

  /**
   * Starts the gateway (`--stdio`), its output read through {@link gatewayOutput}, which keeps the
   * SDK from holding all of it.
   */
  async spawnGateway(argv: readonly string[], options: SpawnOptions = {}): Promise<SandboxProcess> {
    throwIfAborted(options.signal);
    const stdout = new ChunkQueue(Number.POSITIVE_INFINITY);
    const stderr = new ChunkQueue(Number.POSITIVE_INFINITY);
    let resolveExit: (exit: ProcessExit) => void = () => {};
    const exited = new Promise<ProcessExit>((resolve) => {
      resolveExit = resolve;
    });
    let over = false;
    let pid = -1;
    const finish = (exit: ProcessExit) => {
      if (over) return;
      over = true;
      this.spawned.delete(pid);
      stdout.end();
      stderr.end();
      resolveExit(exit);
    };
    const output = gatewayOutput({
      stdout,
      stderr,
      connect: (handlers) =>
        this.sandbox.commands.connect(pid, {
          timeoutMs: 0,
          onStdout: handlers.onStdout,
          onStderr: handlers.onStderr,
        }),
      finish,
      isOver: () => over,
    });
    const started = await this.start(
      argv,
      options,
      { stdin: true, onStdout: output.onStdout, onStderr: output.onStderr },
      'spawn',
    );
    pid = started.handle.pid;
    this.spawned.add(pid);
    output.follow(started.handle);
    return this.processOf(pid, stdout, stderr, exited, options.signal);
  }

  async readFile(path: string, options: FileOptions = {}): Promise<Uint8Array> {
    return collectBytes(await this.readStream(path, options));
  }

  async readStream(path: string, options: ReadStreamOptions = {}): Promise<AsyncIterable<Uint8Array>> {
    throwIfAborted(options.signal);
    const target = resolveSandboxPath(this.workdir, path);
    let stream: ReadableStream<Uint8Array>;
    try {
      stream = await this.sandbox.files.read(target, {
        ...this.as,
        format: 'stream',
        ...(options.signal ? { signal: options.signal } : {}),
      });
    } catch (error) {
      if (options.signal?.aborted) throw abortError(options.signal);
      throw translateE2BError(error, `reading ${target}`, target);
    }
    const signal = options.signal;
    return (async function* () {
      const reader = stream.getReader();
      try {
        for (;;) {
          throwIfAborted(signal);
          const { done, value } = await reader.read();
          if (done) return;
          yield value;
        }
      } catch (error) {
        if (signal?.aborted) throw abortError(signal);
        throw translateE2BError(error, `reading ${target}`, target);
      } finally {
        await reader.cancel().catch(() => {});
      }
    })();
  }

  /** Describes a path through envd's Stat, following symbolic links. */
  async stat(path: string, options: FileOptions = {}): Promise<FileStat> {
    throwIfAborted(options.signal);
    let target = resolveSandboxPath(this.workdir, path);
    for (let hops = 0; hops < 40; hops++) {
      let info: Awaited<ReturnType<Sandbox['files']['getInfo']>>;
      try {
        info = await this.sandbox.files.getInfo(target, this.as);
      } catch (error) {
        throw translateE2BError(error, `stat ${target}`, target);
      }
      if (info.symlinkTarget) {
        target = resolveSandboxPath(target.slice(0, target.lastIndexOf('/')) || '/', info.symlinkTarget);
        continue;
      }
      return {
        type: info.type === 'dir' ? 'directory' : info.type === 'file' ? 'file' : 'other',
        size: info.size,
        mtimeMs: info.modifiedTime?.getTime() ?? 0,
        mode: info.mode & 0o7777,
      };
    }
    throw new WsError('INVALID_ARGUMENT', `Too many symbolic links in ${path}`);
  }

  /**
   * Writes a file whole or not at all: a command resolves the target's links and makes a temporary
   * file beside it, envd's file API uploads the bytes into it, and a second command gives it the
   * mode and renames it over the target.
   */
  async writeFile(path: string, data: Uint8Array | string, options: WriteOptions = {}): Promise<void> {
    const bytes = typeof data === 'string' ? encodeUtf8(data) : data;
    await writeThroughTemporary(
      this,
      resolveSandboxPath(this.workdir, path),
      options,
      // A copy of exactly these bytes: the SDK sends an ArrayBuffer, which for a view would be the
      // whole underlying buffer (a Buffer's `slice()` is a view too: for one from Node's pool, 8 KiB
      // of this process's memory).
      async (temporary) =>
        void (await this.sandbox.files.write(temporary, new Uint8Array(bytes).buffer, this.as)),
      (error, target) => translateE2BError(error, `writing ${target}`, target),
    );
  }
}
