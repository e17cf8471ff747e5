// Commands in a container through the Engine API's exec: each in its own process group, signalled there.
import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import {
  DEFAULT_MAX_OUTPUT_BYTES,
  type ExecOptions,
  type ExecResult,
  type ProcessExit,
  type SandboxProcess,
  type SpawnOptions,
  WsError,
} from '@ws/core';
import {
  abortError,
  assertArgv,
  ChunkQueue,
  createExecResult,
  normalizeInput,
  OutputCollector,
  resolveSandboxPath,
  settledWithin,
  stopWithGrace,
  throwIfAborted,
} from '@ws/core/backend';
import type Docker from 'dockerode';

const KILL_GRACE_MS = 2_000;

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

/**
 * Runs commands in a container as attached execs (hijacked stream, demultiplexed; the exit code from
 * inspect; a timeout or abort kills the process group inside). `translate` turns an Engine API error
 * into a WsError.
 */
export class ContainerExec {
  /** Processes started by `spawn` that have not exited, each with what drops its unread output. */
  private readonly spawned = new Map<SandboxProcess, () => void>();

  constructor(
    private readonly container: Docker.Container,
    private readonly workdir: string,
    private readonly env: Readonly<Record<string, string>>,
    private readonly translate: (error: unknown, what: string) => Promise<WsError>,
  ) {}

  /** Starts `argv` through the wrapper as an attached exec (stdout and stderr, stdin when asked). */
  private async attach(
    argv: readonly string[],
    options: { cwd?: string; env?: Readonly<Record<string, string>>; signal?: AbortSignal },
    withStdin: boolean,
    what: 'exec' | 'spawn',
  ): Promise<{ exec: Docker.Exec; stream: Duplex; pidFile: string; cwd: string }> {
    assertArgv(argv);
    throwIfAborted(options.signal);
    const cwd = options.cwd === undefined ? this.workdir : resolveSandboxPath(this.workdir, options.cwd);
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
    // Output nobody will read is dropped: a full queue holds the stream, and with it the exit.
    const drop = () => {
      stdout.end();
      stderr.end();
    };
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
    let process: SandboxProcess | undefined;
    void exited.then(() => {
      options.signal?.removeEventListener('abort', onAbort);
      if (process) this.spawned.delete(process);
    });
    process = {
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
        drop();
        await stopWithGrace(signal, exited, KILL_GRACE_MS);
        // A stream the engine still holds open after the kill is cut.
        await settledWithin(exited, KILL_GRACE_MS);
        stream.destroy();
        await exited;
      },
    };
    this.spawned.set(process, drop);
    return process;
  }

  /**
   * Ends what `spawn` started and still runs: drops the output nobody read and, with `kill`, kills
   * each process and waits for its end. Without it the caller ends them (by removing the container).
   */
  async endSpawned(kill: boolean): Promise<void> {
    const processes = [...this.spawned];
    this.spawned.clear();
    // Disposing drops the output too.
    if (kill) await Promise.all(processes.map(([process]) => process[Symbol.asyncDispose]()));
    else for (const [, drop] of processes) drop();
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

  /**
   * Creates a plain exec of `argv` now, which fails at once when the container is stopped or gone,
   * and returns what runs it: its exit code and its output (stdout and stderr together).
   */
  async prepare(argv: readonly string[]): Promise<() => Promise<{ exitCode: number; output: string }>> {
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
