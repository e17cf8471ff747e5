import type { Duplex } from 'node:stream';
import { Code, ConnectError } from '@connectrpc/connect';
import type Docker from 'dockerode';
import {
  type ExecHandle,
  execExitCode,
  FrameDemuxer,
  runExec,
  startExec,
  streamDone,
} from '../docker/exec.js';
import type { Account } from './accounts.js';
import { EventQueue } from './event-queue.js';

/** `process.ProcessConfig` as the handlers see it. */
export interface ProcessConfig {
  cmd: string;
  args: string[];
  envs: Record<string, string>;
  cwd?: string;
}

/** The `event` oneof of `process.ProcessEvent`, in @bufbuild/protobuf's init shape. */
export type ProcessEventValue =
  | { case: 'start'; value: { pid: number } }
  | { case: 'data'; value: { output: { case: 'stdout' | 'stderr' | 'pty'; value: Uint8Array } } }
  | { case: 'end'; value: { exitCode: number; exited: boolean; status: string; error?: string } }
  | { case: 'keepalive'; value: Record<string, never> };

export type SignalName = 'SIGKILL' | 'SIGTERM';
const SIGNAL_NUMBERS: Readonly<Record<SignalName, number>> = { SIGKILL: 9, SIGTERM: 15 };
const SIGNAL_TEXT: Readonly<Record<SignalName, string>> = { SIGKILL: 'killed', SIGTERM: 'terminated' };

// A client that reads slower than the command writes pauses the exec stream past HIGH buffered bytes.
const HIGH_WATER = 8 << 20;
const LOW_WATER = 1 << 20;

// Starts the command in $1 (cwd) with $2… as argv, after printing a marker line on stdout: its pid (the
// exec'd shell's, which `exec` hands to the command), or why it cannot start (no such cwd, no such
// command), which envd reports as an error instead of a start event. An exec'd process leads its own
// process group (the engine makes it a session leader), so signalling -pid reaches its children too.
const WRAPPER = `cd "$1" 2>/dev/null || { printf 'ws-e2b:nocwd\\n'; exit 1; }
shift
command -v "$1" >/dev/null 2>&1 || { printf 'ws-e2b:nocmd\\n'; exit 1; }
printf 'ws-e2b:pid:%s\\n' "$$"
exec "$@"`;
const MARKER = /^ws-e2b:(nocwd|nocmd|pid:(\d+))\r?$/;

// The group first, then the process alone (when it is not a group leader). dash takes no `--` here.
const KILL = 'kill "-$1" "-$2" 2>/dev/null || kill "-$1" "$2"';

/** A command started through `process.Process/Start`: one attached exec. */
export class ManagedProcess {
  private readonly subscribers = new Set<EventQueue<ProcessEventValue>>();
  private stdinOpen: boolean;
  private signalled: SignalName | undefined;
  private timeoutTimer: NodeJS.Timeout | undefined;
  private paused = false;
  ended = false;

  constructor(
    /** Who runs it: signals are sent as this user (the container holds no capability to signal others). */
    readonly user: string,
    readonly pid: number,
    readonly config: ProcessConfig,
    readonly tag: string | undefined,
    readonly tty: boolean,
    private readonly exec: ExecHandle,
    private readonly stream: Duplex,
    private readonly table: ProcessTable,
    stdin: boolean,
  ) {
    this.stdinOpen = stdin;
  }

  /** A queue of this process's events from now on, with the backpressure hook. */
  subscribe(): EventQueue<ProcessEventValue> {
    const queue = new EventQueue<ProcessEventValue>(() => this.maybeResume());
    if (this.ended) queue.end();
    else this.subscribers.add(queue);
    return queue;
  }

  /** Stops feeding a queue and drops what it holds, so it no longer holds the process paused. */
  unsubscribe(queue: EventQueue<ProcessEventValue>): void {
    this.subscribers.delete(queue);
    queue.discard();
    this.maybeResume();
  }

  emit(event: ProcessEventValue, size = 0): void {
    for (const queue of this.subscribers) queue.push(event, size);
    if (!this.paused && [...this.subscribers].some((queue) => queue.bytes > HIGH_WATER)) {
      this.paused = true;
      this.stream.pause();
    }
  }

  private maybeResume(): void {
    if (this.paused && [...this.subscribers].every((queue) => queue.bytes < LOW_WATER)) {
      this.paused = false;
      this.stream.resume();
    }
  }

  /** Kills the process after `timeoutMs`, as envd does with a `Connect-Timeout-Ms` on Start. */
  armTimeout(timeoutMs: number): void {
    if (timeoutMs <= 0) return;
    this.timeoutTimer = setTimeout(() => void this.signal('SIGKILL').catch(() => {}), timeoutMs);
    this.timeoutTimer.unref();
  }

  async writeInput(data: Uint8Array, kind: 'stdin' | 'pty'): Promise<void> {
    if (this.ended) throw new ConnectError(`process with pid ${this.pid} not found`, Code.NotFound);
    if (kind === 'pty' && !this.tty) {
      throw new ConnectError('the process has no pty; write to its stdin', Code.FailedPrecondition);
    }
    if (kind === 'stdin' && this.tty) {
      throw new ConnectError(
        'the process has a pty; write to the pty, not the stdin',
        Code.FailedPrecondition,
      );
    }
    if (!this.stdinOpen) {
      throw new ConnectError('stdin not enabled or closed', Code.FailedPrecondition);
    }
    await new Promise<void>((resolve, reject) =>
      this.stream.write(data, (error) =>
        error
          ? reject(new ConnectError(`error writing to stdin: ${error.message}`, Code.Internal))
          : resolve(),
      ),
    );
  }

  closeStdin(): void {
    if (this.tty) {
      throw new ConnectError(
        'cannot close stdin of a pty process; send Ctrl+D (0x04)',
        Code.FailedPrecondition,
      );
    }
    if (!this.stdinOpen) return;
    this.stdinOpen = false;
    this.stream.end(); // half-close: the engine closes the command's stdin, output keeps flowing
  }

  async signal(signal: SignalName): Promise<void> {
    this.signalled ??= signal;
    const result = await this.table.runAs(this.user, [
      'sh',
      '-c',
      KILL,
      'sh',
      signal.slice(3),
      String(this.pid),
    ]);
    if (result.exitCode !== 0 && !this.ended) {
      throw new ConnectError(
        `error sending signal: ${result.stderr.toString('utf8').trim() || `exit ${result.exitCode}`}`,
        Code.Internal,
      );
    }
  }

  resize(cols: number, rows: number): Promise<void> {
    if (!this.tty) throw new ConnectError('tty not assigned to process', Code.FailedPrecondition);
    return this.exec.resize({ h: rows, w: cols }).then(() => undefined);
  }

  /** Reads the exit status once the stream has ended and tells every subscriber. */
  async finish(): Promise<void> {
    if (this.ended) return;
    const exitCode = await execExitCode(this.exec);
    if (this.timeoutTimer) clearTimeout(this.timeoutTimer);
    this.ended = true;
    this.emit({ case: 'end', value: endEvent(exitCode, this.signalled) });
    for (const queue of this.subscribers) queue.end();
    this.subscribers.clear();
  }

  /** Stops following the process (the emulator closes, or the sandbox is gone). */
  detach(error?: unknown): void {
    if (this.timeoutTimer) clearTimeout(this.timeoutTimer);
    for (const queue of this.subscribers) queue.end(error);
    this.subscribers.clear();
    this.ended = true;
    this.stream.destroy();
  }
}

function endEvent(
  exitCode: number,
  signalled: SignalName | undefined,
): {
  exitCode: number;
  exited: boolean;
  status: string;
  error?: string;
} {
  // The engine reports a signalled exec as 128+signal; when this emulator sent that signal, report it as
  // Go's os/exec does for envd (exit code -1, not exited, "signal: killed").
  if (signalled && exitCode === 128 + SIGNAL_NUMBERS[signalled]) {
    const status = `signal: ${SIGNAL_TEXT[signalled]}`;
    return { exitCode: -1, exited: false, status, error: status };
  }
  if (exitCode < 0) {
    return { exitCode: -1, exited: false, status: 'unknown', error: 'the exit status could not be read' };
  }
  const status = `exit status ${exitCode}`;
  return exitCode === 0
    ? { exitCode, exited: true, status }
    : { exitCode, exited: true, status, error: status };
}

export interface StartOptions {
  account: Account;
  cwd: string;
  config: ProcessConfig;
  tag?: string;
  stdin: boolean;
  pty?: { cols: number; rows: number };
  /** envd kills the process after this (the request's Connect-Timeout-Ms); 0: never. */
  timeoutMs: number;
}

/** The processes one sandbox's envd started, by pid. */
export class ProcessTable {
  private readonly processes = new Map<number, ManagedProcess>();

  constructor(private readonly container: Docker.Container) {}

  runAs(user: string, argv: readonly string[]): ReturnType<typeof runExec> {
    return runExec(this.container, argv, { user });
  }

  list(): ManagedProcess[] {
    return [...this.processes.values()].filter((process) => !process.ended);
  }

  /** The process a `ProcessSelector` names; `not_found` when it has ended or never was. */
  find(selector: { case: 'pid'; value: number } | { case: 'tag'; value: string } | { case: undefined }) {
    const found =
      selector.case === 'pid'
        ? this.processes.get(selector.value)
        : selector.case === 'tag'
          ? this.list().find((process) => process.tag === selector.value)
          : undefined;
    if (!found || found.ended) {
      const what =
        selector.case === 'pid'
          ? `pid ${selector.value}`
          : selector.case === 'tag'
            ? `tag ${selector.value}`
            : 'no selector';
      throw new ConnectError(`process with ${what} not found`, Code.NotFound);
    }
    return found;
  }

  /**
   * Starts a command and resolves once its pid is known, with a queue that has every event after the
   * start event. Rejects like envd when the command cannot start (no such cwd or command).
   */
  async start(
    options: StartOptions,
  ): Promise<{ process: ManagedProcess; queue: EventQueue<ProcessEventValue> }> {
    const { account, config } = options;
    const env = [`HOME=${account.home}`, `USER=${account.name}`, `LOGNAME=${account.name}`];
    for (const [name, value] of Object.entries(config.envs)) env.push(`${name}=${value}`);
    const tty = options.pty !== undefined;
    const { exec, stream } = await startExec(
      this.container,
      ['sh', '-c', WRAPPER, 'sh', options.cwd, config.cmd, ...config.args],
      { user: account.name, env, stdin: options.stdin || tty, tty },
    );
    if (options.pty) await exec.resize({ h: options.pty.rows, w: options.pty.cols }).catch(() => {});

    // Until the marker line is read, output is held back; then it flows to the process's subscribers.
    let process: ManagedProcess | undefined;
    const early: { channel: 'stdout' | 'stderr' | 'pty'; payload: Buffer }[] = [];
    let head = Buffer.alloc(0);
    const deliver = (channel: 'stdout' | 'stderr' | 'pty', payload: Buffer) => {
      if (payload.length === 0) return;
      if (process)
        process.emit({ case: 'data', value: { output: { case: channel, value: payload } } }, payload.length);
      else early.push({ channel, payload });
    };
    let resolveMarker: (marker: string | undefined) => void = () => {};
    const marker = new Promise<string | undefined>((resolve) => {
      resolveMarker = resolve;
    });
    let markerSeen = false;
    const onStdout = (payload: Buffer, channel: 'stdout' | 'pty') => {
      if (markerSeen) {
        deliver(channel, payload);
        return;
      }
      head = Buffer.concat([head, payload]);
      const newline = head.indexOf(0x0a);
      if (newline < 0) return;
      markerSeen = true;
      const line = head.subarray(0, newline).toString('utf8');
      const rest = head.subarray(newline + 1);
      head = Buffer.alloc(0);
      resolveMarker(line);
      deliver(channel, rest);
    };
    const demuxer = new FrameDemuxer((channel, payload) =>
      channel === 1 ? onStdout(payload, 'stdout') : deliver('stderr', payload),
    );
    stream.on('data', (chunk: Buffer) => (tty ? onStdout(chunk, 'pty') : demuxer.push(chunk)));
    const done = streamDone(stream);
    void done.then(() => resolveMarker(undefined));

    const line = await marker;
    const match = line === undefined ? null : MARKER.exec(line);
    if (!match?.[2]) {
      await done;
      stream.destroy();
      const stderr = Buffer.concat(
        early.filter((item) => item.channel === 'stderr').map((item) => item.payload),
      );
      if (match?.[1] === 'nocwd') {
        throw new ConnectError(`cwd '${options.cwd}' does not exist`, Code.InvalidArgument);
      }
      if (match?.[1] === 'nocmd') {
        throw new ConnectError(
          `error starting process '${[config.cmd, ...config.args].join(' ')}': exec: "${config.cmd}": executable file not found in $PATH`,
          Code.InvalidArgument,
        );
      }
      throw new ConnectError(
        `the process did not start: ${stderr.toString('utf8').trim() || 'no output'}`,
        Code.Internal,
      );
    }
    const started = new ManagedProcess(
      account.name,
      Number(match[2]),
      config,
      options.tag,
      tty,
      exec,
      stream,
      this,
      options.stdin || tty,
    );
    const queue = started.subscribe();
    process = started;
    for (const item of early) deliver(item.channel, item.payload);
    this.processes.set(started.pid, started);
    started.armTimeout(options.timeoutMs);
    void done.then(async () => {
      await started.finish().catch(() => started.detach());
      if (this.processes.get(started.pid) === started) this.processes.delete(started.pid);
    });
    return { process: started, queue };
  }

  /** Stops following every process (their subscribers get `error`). */
  detachAll(error?: unknown): void {
    for (const process of this.processes.values()) process.detach(error);
    this.processes.clear();
  }
}
