import { randomUUID } from 'node:crypto';
import type { Exec } from '@kubernetes/client-node';
import {
  DEFAULT_MAX_OUTPUT_BYTES,
  type ExecOptions,
  type ExecResult,
  type FileOptions,
  type ProcessExit,
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
  completeSandbox,
  createExecResult,
  cwdError,
  encodeUtf8,
  enterCwd,
  normalizeInput,
  OutputCollector,
  resolveSandboxPath,
  settledWithin,
  stopWithGrace,
  throwIfAborted,
} from '@ws/core/backend';
import { CLOSE_CAPABLE_PROTOCOL, type PodExec, type PodTarget, startPodExec } from './k8s-exec.js';

/** The workdir inside the Pod: the PVC's mount. */
export const POD_WORKDIR = '/workspace';
const KILL_GRACE_MS = 2_000;
/** How long after a command's stop began its connection may stay silent before the call fails. */
const ANSWER_GRACE_MS = 10_000;
/** How long a signal waits for a just-started command to record its pid. */
const PID_WAIT_MS = 5_000;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

// Kubernetes' exec takes argv only (no working directory, no environment): every command goes
// through this wrapper. $1 cwd, $2 pid file, $3 how many NAME=value arguments follow, then argv.
// The command leads its own session and process group (setsid, from a background job so that it is
// not a group leader already), with the caller's stdin, and its pid is written where a timeout or
// an abort can find it to signal the whole group.
const WRAPPER = `${enterCwd('"$1"')}
pidfile=$2 n=$3; shift 3
while [ "$n" -gt 0 ]; do export "$1"; shift; n=$((n - 1)); done
exec 3<&0
if command -v setsid >/dev/null 2>&1; then setsid "$@" 0<&3 3<&- & else "$@" 0<&3 3<&- & fi
pid=$!
exec 3<&-
echo "$pid" > "$pidfile"
wait "$pid"; status=$?
rm -f "$pidfile"
exit "$status"`;

// $1 pid file, $2 signal name. A negative pid names the group; exit 3: no pid recorded (yet).
const KILL_SCRIPT =
  'p=$(cat "$1" 2>/dev/null); [ -n "$p" ] || exit 3; kill "-$2" "-$p" 2>/dev/null || kill "-$2" "$p" 2>/dev/null; true';

// $1 the file: 66 missing, 67 a folder (core's exit codes for these cases).
const READ_SCRIPT = `[ -e "$1" ] || exit 66
[ -d "$1" ] && exit 67
[ -f "$1" ] || { echo "$1 is not a regular file (a FIFO, device or socket)" >&2; exit 65; }
exec cat -- "$1"`;

type Signal = 'TERM' | 'KILL' | 'INT' | 'HUP';

/**
 * A Pod as a sandbox, over Kubernetes' exec alone: commands through a wrapper that sets the working
 * directory and environment and records the process group (a timeout or abort signals it with a
 * second exec); files as bytes over the exec streams (`cat` out; in, a temporary file beside the
 * target renamed over it once every byte arrived, through core's write scripts). Everything is
 * binary: the WebSocket frames carry bytes.
 */
export class K8sSandbox implements WsSandbox {
  readonly backend = 'k8s';
  readonly workdir = POD_WORKDIR;
  readonly capabilities: SandboxCapabilities = {
    stat: false,
    list: false,
    remove: false,
    mkdir: false,
    rename: false,
    readStream: false,
    writeStream: false,
    spawn: true,
  };
  /** The subprotocol the API server speaks, once one exec told. */
  private protocol: string | undefined;
  /** Processes `spawn` started that have not ended. */
  private readonly spawned = new Set<SandboxProcess>();

  constructor(
    private readonly exec_: Exec,
    private readonly target: PodTarget,
  ) {}

  /** The Pod this sandbox runs in. */
  get pod(): string {
    return this.target.pod;
  }

  /** Kills every process `spawn` started that still runs. */
  async killSpawned(): Promise<void> {
    await Promise.all([...this.spawned].map((process) => process[Symbol.asyncDispose]()));
    this.spawned.clear();
  }

  private async start(
    argv: readonly string[],
    options: { cwd?: string | undefined; env?: Readonly<Record<string, string>> | undefined },
    handlers: {
      stdin: boolean;
      onStdout: (chunk: Uint8Array) => void | Promise<void>;
      onStderr: (chunk: Uint8Array) => void | Promise<void>;
    },
  ): Promise<{ exec: PodExec; pidFile: string; cwd: string }> {
    assertArgv(argv);
    const cwd = options.cwd === undefined ? POD_WORKDIR : resolveSandboxPath(POD_WORKDIR, options.cwd);
    const assignments: string[] = [];
    for (const [name, value] of Object.entries(options.env ?? {})) {
      if (!ENV_NAME.test(name))
        throw new WsError('INVALID_ARGUMENT', `${JSON.stringify(name)} is not an environment variable name`, {
          details: { name },
        });
      assignments.push(`${name}=${value}`);
    }
    if (handlers.stdin && this.protocol !== undefined && this.protocol !== CLOSE_CAPABLE_PROTOCOL)
      throw new WsError(
        'CAPABILITY_UNSUPPORTED',
        `This API server speaks ${this.protocol}, which cannot end a command's input without closing its output: input needs ${CLOSE_CAPABLE_PROTOCOL} (Kubernetes 1.30 or newer)`,
        { details: { protocol: this.protocol } },
      );
    const pidFile = `/tmp/.ws-exec-${randomUUID()}.pid`;
    const exec = await startPodExec(
      this.exec_,
      this.target,
      ['sh', '-c', WRAPPER, 'sh', cwd, pidFile, String(assignments.length), ...assignments, ...argv],
      handlers,
    );
    this.protocol = exec.protocol;
    return { exec, pidFile, cwd };
  }

  async exec(argv: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    throwIfAborted(options.signal);
    const limit = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    const stdout = new OutputCollector(limit);
    const stderr = new OutputCollector(limit);
    const handler =
      (collector: OutputCollector, listener: ExecOptions['onStdout']) => (chunk: Uint8Array) => {
        collector.push(chunk);
        if (listener) return Promise.resolve(listener(chunk)).then(() => {});
      };
    const { exec, pidFile, cwd } = await this.start(argv, options, {
      stdin: options.stdin !== undefined,
      onStdout: handler(stdout, options.onStdout),
      onStderr: handler(stderr, options.onStderr),
    });
    let timedOut = false;
    let aborted = false;
    let killing = false;
    // A connection gone silent ends neither with the command nor with its kill: the call still ends,
    // ANSWER_GRACE_MS after the kill began, saying the command may have run.
    let stallTimer: NodeJS.Timeout | undefined;
    let watchStall = () => {};
    const stalled = new Promise<never>((_, reject) => {
      watchStall = () => {
        stallTimer = setTimeout(
          () =>
            reject(
              new WsError(
                'BACKEND_UNAVAILABLE',
                `The exec connection to Pod ${this.target.pod} gave no answer within ${ANSWER_GRACE_MS} ms of stopping the command: it stalled; the command may have run`,
                { details: { pod: this.target.pod, mayHaveRun: true, lost: true } },
              ),
            ),
          ANSWER_GRACE_MS,
        );
      };
    });
    stalled.catch(() => {});
    const kill = () => {
      if (killing) return;
      killing = true;
      watchStall();
      void stopWithGrace(
        (signal) => this.signalGroup(pidFile, signal, exec.ended),
        exec.ended,
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
    // An abort while the command was starting fired no listener: act on it now.
    if (options.signal?.aborted) onAbort();
    if (options.stdin !== undefined) void this.feed(exec, normalizeInput(options.stdin));
    try {
      const { exitCode } = await Promise.race([exec.ended, stalled]);
      if (aborted) throw abortError(options.signal);
      const badCwd = cwdError(exitCode, stderr.bytes(), cwd, 'the Pod');
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
      throw error;
    } finally {
      if (timer) clearTimeout(timer);
      clearTimeout(stallTimer);
      options.signal?.removeEventListener('abort', onAbort);
      exec.close();
    }
  }

  /** Streams input into a command, then ends it; a command that stopped reading ends the feeding. */
  private async feed(exec: PodExec, input: Uint8Array | AsyncIterable<Uint8Array>): Promise<void> {
    const maxChunk = 256 * 1024;
    const send = async (bytes: Uint8Array) => {
      for (let offset = 0; offset < bytes.byteLength; offset += maxChunk)
        await exec.write(bytes.subarray(offset, offset + maxChunk));
    };
    try {
      if (input instanceof Uint8Array) await send(input);
      else for await (const chunk of input) await send(chunk);
    } catch {
      // The command ended or the connection went: what it read is its business.
    }
    exec.closeStdin();
  }

  /**
   * Signals the process group of the command whose wrapper writes `pidFile`. A signal sent right
   * after the start can come before the pid is written: it is sent again until the pid is there, as
   * long as the command has not ended.
   */
  private async signalGroup(pidFile: string, signal: Signal, ended: Promise<unknown>): Promise<void> {
    let over = false;
    const stop = () => {
      over = true;
    };
    void ended.then(stop, stop);
    const deadline = Date.now() + PID_WAIT_MS;
    try {
      for (;;) {
        const exec = await startPodExec(
          this.exec_,
          this.target,
          ['sh', '-c', KILL_SCRIPT, 'sh', pidFile, signal],
          {
            stdin: false,
            onStdout: () => {},
            onStderr: () => {},
          },
        );
        const { exitCode } = await exec.ended.finally(() => exec.close());
        if (exitCode !== 3 || over || Date.now() > deadline) return;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    } catch {
      // The Pod may be gone; then so is the process.
    }
  }

  /** A long-lived process in the Pod (an exec whose socket stays open), in its own process group. */
  async spawn(argv: readonly string[], options: SpawnOptions = {}): Promise<SandboxProcess> {
    throwIfAborted(options.signal);
    const stdout = new ChunkQueue();
    const stderr = new ChunkQueue();
    const { exec, pidFile } = await this.start(argv, options, {
      stdin: true,
      onStdout: (chunk) => stdout.push(chunk),
      onStderr: (chunk) => stderr.push(chunk),
    });
    const exited: Promise<ProcessExit> = exec.ended.then(
      ({ exitCode }) => ({ exitCode }),
      () => ({ exitCode: -1 }),
    );
    const signal = (name: Signal) => this.signalGroup(pidFile, name, exited);
    const onAbort = () => void signal('KILL');
    options.signal?.addEventListener('abort', onAbort, { once: true });
    // An abort while the command was starting fired no listener: act on it now.
    if (options.signal?.aborted) onAbort();
    let process: SandboxProcess | undefined;
    void exited.then(() => {
      stdout.end();
      stderr.end();
      exec.close();
      options.signal?.removeEventListener('abort', onAbort);
      if (process) this.spawned.delete(process);
    });
    // Writes go one at a time, so they arrive in order.
    let writing: Promise<void> = Promise.resolve();
    process = {
      pid: undefined,
      stdout: stdout.iterate(),
      stderr: stderr.iterate(),
      write: (chunk) => {
        const bytes = typeof chunk === 'string' ? encodeUtf8(chunk) : chunk;
        const next = writing.then(() => exec.write(bytes));
        writing = next.catch(() => {});
        return next.catch((error: unknown) => {
          throw new WsError('CONFLICT', 'The process no longer accepts input', { cause: error });
        });
      },
      closeStdin: async () => {
        await writing;
        // Without the close frame, ending the input closes the socket: the process then reads EOF.
        exec.closeStdin();
      },
      kill: async (name = 'SIGTERM') => {
        const short = name.replace(/^SIG/, '');
        await signal(short === 'KILL' || short === 'INT' || short === 'HUP' ? short : 'TERM');
      },
      exited,
      [Symbol.asyncDispose]: async () => {
        // Output nobody will read is dropped: a full queue holds the socket, and with it the exit.
        stdout.end();
        stderr.end();
        await stopWithGrace(signal, exited, KILL_GRACE_MS);
        // A socket still open after the kill is closed (the API server then ends the command).
        if (!(await settledWithin(exited, KILL_GRACE_MS))) exec.close();
        await exited;
      },
    };
    this.spawned.add(process);
    return process;
  }

  async readFile(path: string, options: FileOptions = {}): Promise<Uint8Array> {
    throwIfAborted(options.signal);
    const target = resolveSandboxPath(POD_WORKDIR, path);
    const chunks: Uint8Array[] = [];
    let size = 0;
    const result = await this.exec(['sh', '-c', READ_SCRIPT, 'sh', target], {
      cwd: '/',
      maxOutputBytes: 64 * 1024,
      onStdout: (chunk) => {
        chunks.push(chunk);
        size += chunk.byteLength;
      },
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (result.exitCode === 66)
      throw new WsError('NOT_FOUND', `${target}: no such file or directory`, { details: { path: target } });
    if (result.exitCode === 67)
      throw new WsError('IS_A_DIRECTORY', `Reading ${target} failed: it is a directory`, {
        details: { path: target },
      });
    if (result.exitCode === 65)
      throw new WsError('INVALID_ARGUMENT', `Reading ${target} failed: ${result.stderrText.trim()}`, {
        details: { path: target },
      });
    if (result.exitCode !== 0)
      throw new WsError(
        /permission denied/i.test(result.stderrText) ? 'PERMISSION_DENIED' : 'BACKEND_ERROR',
        `Reading ${target} failed: ${result.stderrText.trim() || `exit code ${result.exitCode}`}`,
        { details: { path: target } },
      );
    const bytes = new Uint8Array(size);
    let offset = 0;
    for (const chunk of chunks) {
      bytes.set(chunk, offset);
      offset += chunk.byteLength;
    }
    return bytes;
  }

  /**
   * Writes a file whole or not at all with core's write scripts: the bytes go into a fresh temporary
   * file beside the target (where its links lead, inside the Pod), which is renamed over the target
   * only once the command saw every byte and the end of the input.
   */
  async writeFile(path: string, data: Uint8Array | string, options: WriteOptions = {}): Promise<void> {
    throwIfAborted(options.signal);
    const bytes = typeof data === 'string' ? encodeUtf8(data) : data;
    await completeSandbox(this).writeStream(
      path,
      (async function* () {
        yield bytes;
      })(),
      options,
    );
  }
}
