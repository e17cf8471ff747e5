import { randomUUID } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import type Docker from 'dockerode';
import { execExitCode, FrameDemuxer, KILL_GROUP, runExec, startExec, streamDone } from '../docker/exec.js';

const MARKER_PREFIX = 'ws-opensandbox:';

// Runs the command execd's way: `bash -c <command>` (else `sh -c`), in the cwd, as the leader of its own
// process group (a docker exec is a session leader, and `exec` keeps the pid). The first stderr line is
// a marker the command's output never reaches: its pid, or that the cwd is missing.
const RUN = `if [ -n "$1" ]; then cd -- "$1" 2>/dev/null || { printf '${MARKER_PREFIX}nocwd\\n' >&2; exit 97; }; fi
printf '${MARKER_PREFIX}pid:%s\\n' "$$" >&2
if command -v bash >/dev/null 2>&1; then exec bash -c "$2"; else exec sh -c "$2"; fi`;

// A session command: the session's cwd and exported variables (files in its folder) are restored first
// and saved again when the shell exits, so `cd` and `export` carry over from one command to the next.
const SESSION_RUN = `__ws_dir=$1
[ -d "$__ws_dir" ] || { printf '${MARKER_PREFIX}nosession\\n' >&2; exit 96; }
cd -- "$(cat -- "$__ws_dir/cwd" 2>/dev/null || echo /)" 2>/dev/null
if [ -n "$2" ]; then cd -- "$2" 2>/dev/null || { printf '${MARKER_PREFIX}nocwd\\n' >&2; exit 97; }; fi
[ -f "$__ws_dir/env" ] && . "$__ws_dir/env"
trap 'pwd > "$__ws_dir/cwd"; export -p > "$__ws_dir/env"' EXIT
printf '${MARKER_PREFIX}pid:%s\\n' "$$" >&2
eval "$3"`;
const SESSION_SHELL = `if command -v bash >/dev/null 2>&1; then exec bash -c "$0" bash "$@"; else exec sh -c "$0" sh "$@"; fi`;

/** Where session state lives in a sandbox. */
export const SESSION_ROOT = '/tmp/.ws-opensandbox-sessions';

export interface CommandSpec {
  command: string;
  /** Empty: the container's working directory. */
  cwd: string;
  env: string[];
  /** 0: none. */
  timeoutMs: number;
  /** `uid[:gid]`, or undefined for the image's user. */
  user: string | undefined;
  /** Runs in this session's folder instead of a fresh shell. */
  sessionDir?: string;
}

/** How a command ended. */
export interface CommandOutcome {
  exitCode: number;
  /** Why it was killed, when it was. */
  killed: 'timeout' | 'interrupt' | 'disconnect' | undefined;
  /** A startup failure (missing cwd or session) instead of a run. */
  failure: string | undefined;
}

/** One command execd started; background ones keep their combined output for `/logs`. */
export class CommandRun {
  readonly id = randomUUID();
  readonly startedAt = new Date();
  finishedAt: Date | undefined;
  outcome: CommandOutcome | undefined;
  /** Combined stdout and stderr (background commands only). */
  readonly output: Buffer[] = [];
  outputBytes = 0;
  pid: number | undefined;
  private killReason: CommandOutcome['killed'];
  readonly done: Promise<CommandOutcome>;

  constructor(
    private readonly container: Docker.Container,
    readonly spec: CommandSpec,
    handlers: { onStdout?: (text: string) => void; onStderr?: (text: string) => void; keepOutput: boolean },
  ) {
    this.done = this.run(handlers).then((outcome) => {
      this.outcome = outcome;
      this.finishedAt = new Date();
      return outcome;
    });
  }

  get running(): boolean {
    return this.outcome === undefined;
  }

  /** Kills the command's process group (or cuts its stream before the pid is known). */
  async kill(reason: NonNullable<CommandOutcome['killed']>): Promise<void> {
    if (!this.running) return;
    this.killReason ??= reason;
    if (this.pid === undefined) {
      this.abortStream?.();
      return;
    }
    await runExec(this.container, ['sh', '-c', KILL_GROUP, 'sh', String(this.pid)]).catch(() =>
      this.abortStream?.(),
    );
  }

  private abortStream: (() => void) | undefined;

  private async run(handlers: {
    onStdout?: (text: string) => void;
    onStderr?: (text: string) => void;
    keepOutput: boolean;
  }): Promise<CommandOutcome> {
    const { spec } = this;
    const argv = spec.sessionDir
      ? ['sh', '-c', SESSION_SHELL, SESSION_RUN, spec.sessionDir, spec.cwd, spec.command]
      : ['sh', '-c', RUN, 'sh', spec.cwd, spec.command];
    const { exec, stream } = await startExec(this.container, argv, {
      env: spec.env,
      ...(spec.user !== undefined ? { user: spec.user } : {}),
    });
    this.abortStream = () => stream.destroy();
    const stdout = new StringDecoder('utf8');
    const stderr = new StringDecoder('utf8');
    let header: Buffer | undefined = Buffer.alloc(0); // stderr until the marker line is complete
    let failure: string | undefined;
    const keep = (payload: Buffer) => {
      if (!handlers.keepOutput) return;
      this.output.push(payload);
      this.outputBytes += payload.length;
    };
    const onStderr = (payload: Buffer) => {
      keep(payload);
      const text = stderr.write(payload);
      if (text !== '') handlers.onStderr?.(text);
    };
    const demuxer = new FrameDemuxer((channel, payload) => {
      if (channel === 1) {
        keep(payload);
        const text = stdout.write(payload);
        if (text !== '') handlers.onStdout?.(text);
        return;
      }
      if (header === undefined) {
        onStderr(payload);
        return;
      }
      header = Buffer.concat([header, payload]);
      const newline = header.indexOf(0x0a);
      if (newline < 0) return;
      const marker = header.toString('utf8', 0, newline);
      const rest = header.subarray(newline + 1);
      header = undefined;
      const pid = /pid:(\d+)$/.exec(marker)?.[1];
      if (pid !== undefined) this.pid = Number(pid);
      else if (marker.endsWith('nocwd')) failure = `chdir ${spec.cwd}: no such file or directory`;
      else if (marker.endsWith('nosession')) failure = 'session not found';
      if (this.killReason !== undefined && this.pid !== undefined) void this.kill(this.killReason);
      if (rest.length > 0) onStderr(rest);
    });
    stream.on('data', (chunk: Buffer) => demuxer.push(chunk));
    const timer =
      spec.timeoutMs > 0 ? setTimeout(() => void this.kill('timeout'), spec.timeoutMs) : undefined;
    try {
      await streamDone(stream);
    } finally {
      if (timer) clearTimeout(timer);
      stream.destroy();
    }
    const tailOut = stdout.end();
    if (tailOut !== '') handlers.onStdout?.(tailOut);
    const tailErr = stderr.end();
    if (tailErr !== '') handlers.onStderr?.(tailErr);
    return { exitCode: await execExitCode(exec), killed: this.killReason, failure };
  }
}

/** The error event of a failed command, as execd words it (Go's `exec.ExitError`). */
export function failureOf(
  outcome: CommandOutcome,
): { ename: string; evalue: string; traceback: string[] } | undefined {
  if (outcome.failure !== undefined)
    return { ename: 'CommandExecError', evalue: outcome.failure, traceback: [outcome.failure] };
  // Go reports a process it killed by signal as exit code -1, "signal: killed".
  if (outcome.killed !== undefined)
    return { ename: 'CommandExecError', evalue: '-1', traceback: ['signal: killed'] };
  if (outcome.exitCode === 0) return undefined;
  return {
    ename: 'CommandExecError',
    evalue: String(outcome.exitCode),
    traceback: [`exit status ${outcome.exitCode}`],
  };
}

const MAX_FINISHED = 200;

/** The commands execd started in one sandbox, by id (finished ones are kept for `status`/`logs`). */
export class CommandTable {
  private readonly runs = new Map<string, CommandRun>();

  constructor(readonly container: Docker.Container) {}

  start(
    spec: CommandSpec,
    handlers: { onStdout?: (text: string) => void; onStderr?: (text: string) => void; keepOutput: boolean },
  ): CommandRun {
    const run = new CommandRun(this.container, spec, handlers);
    this.runs.set(run.id, run);
    void run.done.then(
      () => this.prune(),
      () => this.runs.delete(run.id),
    );
    return run;
  }

  get(id: string): CommandRun | undefined {
    return this.runs.get(id);
  }

  /** The running commands of one session folder. */
  inSession(sessionDir: string): CommandRun[] {
    return [...this.runs.values()].filter((run) => run.running && run.spec.sessionDir === sessionDir);
  }

  private prune(): void {
    const finished = [...this.runs.values()].filter((run) => !run.running);
    for (const run of finished.slice(0, Math.max(0, finished.length - MAX_FINISHED)))
      this.runs.delete(run.id);
  }
}
