import { type ChildProcess, type StdioOptions, spawn } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { constants as osConstants } from 'node:os';
import type { Readable } from 'node:stream';
import { abortError, fromErrno, WsError } from '../contracts/errors.js';
import {
  DEFAULT_MAX_OUTPUT_BYTES,
  type ExecInput,
  type ExecResult,
  type OutputListener,
  type ProcessExit,
  type SandboxProcess,
} from '../contracts/sandbox.js';
import { createExecResult } from './exec-result.js';
import {
  groupAlive,
  groupEmptied,
  groupExists,
  killGroup,
  type ProcessGroup,
  stopWithGrace,
} from './host-process-group.js';
import { drainAfterExit, pumpInput, readStream } from './host-stdio.js';

export {
  groupAlive,
  killGroup,
  type ProcessGroup,
  ProcessGroups,
  settledWithin,
  stopWithGrace,
} from './host-process-group.js';

/**
 * Running argv as host processes, each in its own process group, is what both the local and the
 * bubblewrap backends do; this module does it once for both.
 */

/** Options of {@link runHostCommand}. `cwd` and `env` are final: nothing is resolved or merged here. */
export interface HostCommandOptions {
  /** The host folder the command runs in. */
  cwd: string;
  /** The command's whole environment (nothing of this process's is added). */
  env: NodeJS.ProcessEnv;
  /** What the command reads on standard input. Default: nothing (closed). */
  stdin?: ExecInput | undefined;
  /** Stops the command's process group after this many ms; the result says `timedOut`. */
  timeoutMs?: number | undefined;
  /** Stops the command's process group when it fires; the call rejects with `ABORTED`. */
  signal?: AbortSignal | undefined;
  /** Receives standard output as it arrives. */
  onStdout?: OutputListener | undefined;
  /** Receives standard error as it arrives. */
  onStderr?: OutputListener | undefined;
  /** Keeps at most this many bytes of each stream; the rest is counted and dropped (`truncated`). */
  maxOutputBytes?: number | undefined;
  /** Time between SIGTERM and SIGKILL when a command is stopped. Default 2 000 ms. */
  killGraceMs?: number | undefined;
  /** Called with the child once it started, so an owner can kill it at shutdown. */
  track?: ((group: ProcessGroup) => () => void) | undefined;
  /** The wrapper argv[0] is (bubblewrap), when what it starts leaves the process group. */
  wrapper?: HostLaunchWrapper | undefined;
}

/**
 * What a wrapper that runs the command in a child of its own session (bubblewrap) adds to how the
 * process is started and signalled: a status pipe at the process's fd 3, and a step that reaches that
 * child before the process group is signalled, since a signal to the group no longer does.
 */
export interface HostLaunchWrapper {
  /** Called once the process started, with the read end of the pipe at its fd 3 and its pid. */
  status(stream: Readable, pid: number | undefined): void;
  /** Delivers what `signal` means to the wrapper's child; resolves once done (never rejects). */
  signal(signal: NodeJS.Signals): Promise<void>;
}

const DEFAULT_KILL_GRACE_MS = 2_000;

/** Checks an argv: non-empty, strings only, no NUL. */
export function assertArgv(argv: readonly string[]): void {
  if (!Array.isArray(argv) || argv.length === 0) {
    throw new WsError('INVALID_ARGUMENT', 'argv must be a non-empty array of strings');
  }
  for (const [index, argument] of argv.entries()) {
    if (typeof argument !== 'string') {
      throw new WsError('INVALID_ARGUMENT', `argv[${index}] must be a string`, { details: { index } });
    }
    if (argument.includes('\0')) {
      throw new WsError('INVALID_ARGUMENT', `argv[${index}] contains a NUL byte`, { details: { index } });
    }
  }
  if (argv[0] === '') throw new WsError('INVALID_ARGUMENT', 'argv[0] must not be empty');
}

/** Sends `signal` to the wrapper's child (when there is a wrapper), then to the group led by `pid`. */
function signalGroup(
  pid: number | undefined,
  signal: NodeJS.Signals,
  wrapper: HostLaunchWrapper | undefined,
): Promise<void> | void {
  if (!wrapper) return killGroup(pid, signal);
  return wrapper.signal(signal).then(() => killGroup(pid, signal));
}

/** SIGTERM to the group now, SIGKILL after `graceMs` unless it exits first (and SIGKILL after). */
function terminateGroup(
  pid: number | undefined,
  exited: Promise<unknown>,
  graceMs: number,
  wrapper: HostLaunchWrapper | undefined,
): Promise<void> {
  return stopWithGrace((signal) => signalGroup(pid, `SIG${signal}`, wrapper), exited, graceMs);
}

/** The child's stdio: stdin as asked, stdout and stderr piped, and a wrapper's status pipe at fd 3. */
function hostStdio(stdin: 'ignore' | 'pipe', wrapper: HostLaunchWrapper | undefined): StdioOptions {
  return wrapper ? [stdin, 'pipe', 'pipe', 'pipe'] : [stdin, 'pipe', 'pipe'];
}

/** Hands the status pipe to the wrapper once the process has one. */
function attachWrapper(child: ChildProcess, wrapper: HostLaunchWrapper | undefined): void {
  const status = child.stdio[3];
  if (wrapper && status) wrapper.status(status as Readable, child.pid);
}

function signalNumber(signal: NodeJS.Signals | null): number | undefined {
  return signal ? (osConstants.signals as Record<string, number>)[signal] : undefined;
}

/**
 * Runs `argv` as a host process in a new process group and resolves with its result. Output is capped
 * while it is read; a timeout or an abort kills the whole group (SIGTERM, then SIGKILL after
 * `killGraceMs`). A missing executable is a result with exit code 127, not an exception.
 *
 * @throws WsError `INVALID_ARGUMENT` for a bad argv, `NOT_FOUND` / `NOT_A_DIRECTORY` for a bad `cwd`,
 *   `ABORTED` when `signal` fires.
 */
export async function runHostCommand(
  argv: readonly string[],
  options: HostCommandOptions,
): Promise<ExecResult> {
  assertArgv(argv);
  if (options.signal?.aborted) throw abortError(options.signal);
  const limit = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  const graceMs = options.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  const [command, ...args] = argv as [string, ...string[]];

  let child: ChildProcess;
  try {
    child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: hostStdio(options.stdin === undefined ? 'ignore' : 'pipe', options.wrapper),
    });
  } catch (error) {
    throw fromErrno(error, `Starting ${command} failed`);
  }
  attachWrapper(child, options.wrapper);

  let failure: unknown;
  let stopping: Promise<void> | undefined;
  let timedOut = false;
  let aborted = false;
  const exited = new Promise<
    { code: number | null; signal: NodeJS.Signals | null } | { error: NodeJS.ErrnoException }
  >((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (error: NodeJS.ErrnoException) => {
      if (child.pid === undefined) resolve({ error });
    });
  });
  const stop = (): Promise<void> => {
    stopping ??= terminateGroup(child.pid, exited, graceMs, options.wrapper);
    return stopping;
  };
  const onListenerError = (error: unknown) => {
    failure ??= error;
    void stop();
  };
  const stdout = readStream(child.stdout, limit, options.onStdout, onListenerError);
  const stderr = readStream(child.stderr, limit, options.onStderr, onListenerError);

  const untrack = options.track?.({ stop });
  const onAbort = () => {
    aborted = true;
    void stop();
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const timer =
    options.timeoutMs !== undefined && options.timeoutMs >= 0
      ? setTimeout(() => {
          timedOut = true;
          void stop();
        }, options.timeoutMs)
      : undefined;

  pumpInput(child, options.stdin).catch((error: unknown) => {
    failure ??= error;
    void stop();
  });

  try {
    const outcome = await exited;
    if ('error' in outcome) {
      const result = await spawnFailure(command, options.cwd, outcome.error);
      // What a shell would have printed reaches a stderr listener too, as any other output does.
      if (result.stderr.length > 0) await options.onStderr?.(result.stderr);
      return result;
    }
    await drainAfterExit(child, [stdout, stderr]);
    if (stopping) await stopping;
    if (aborted) throw abortError(options.signal);
    if (failure !== undefined) throw fromErrno(failure, `Running ${command} failed`);
    const signalNo = signalNumber(outcome.signal);
    const exitCode = timedOut ? -1 : (outcome.code ?? (signalNo !== undefined ? 128 + signalNo : -1));
    return createExecResult({
      exitCode,
      stdout: stdout.collector.bytes(),
      stderr: stderr.collector.bytes(),
      timedOut,
      truncated: stdout.collector.truncated || stderr.collector.truncated,
      signal: outcome.signal ?? undefined,
    });
  } finally {
    if (timer) clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
    untrack?.();
    // Processes the command left running in its group (`cmd &`) are its owner's until they end:
    // stopping them waits for the group to empty, not for the leader, who is gone.
    if (options.track && groupAlive(child.pid)) {
      const pid = child.pid;
      options.track({
        stop: () =>
          stopWithGrace((signal) => killGroup(pid, `SIG${signal}`), groupEmptied(pid, graceMs), graceMs),
        // Asked on every later command, to forget groups that are gone: the cheap check (a group of
        // zombies kept here costs nothing, its stop ends at once).
        alive: () => groupExists(pid),
      });
    }
  }
}

async function spawnFailure(command: string, cwd: string, error: NodeJS.ErrnoException): Promise<ExecResult> {
  if (error.code === 'ENOENT') {
    const cwdStat = await stat(cwd).catch(() => undefined);
    if (!cwdStat)
      throw new WsError('NOT_FOUND', `The working directory ${cwd} does not exist`, {
        cause: error,
        details: { cwd },
      });
    if (!cwdStat.isDirectory())
      throw new WsError('NOT_A_DIRECTORY', `The working directory ${cwd} is not a directory`, {
        cause: error,
        details: { cwd },
      });
    return createExecResult({
      exitCode: 127,
      stderr: new TextEncoder().encode(`${command}: command not found\n`),
    });
  }
  if (error.code === 'EACCES' || error.code === 'ENOEXEC' || error.code === 'EISDIR') {
    return createExecResult({
      exitCode: 126,
      stderr: new TextEncoder().encode(`${command}: cannot execute: ${error.message}\n`),
    });
  }
  throw fromErrno(error, `Starting ${command} failed`);
}

/** Options of {@link spawnHostProcess}. */
export interface HostSpawnOptions {
  /** The host folder the process runs in. */
  cwd: string;
  /** The process's whole environment (nothing of this process's is added). */
  env: NodeJS.ProcessEnv;
  /** Stops the process group when it fires. */
  signal?: AbortSignal | undefined;
  /** Time between SIGTERM and SIGKILL when the process is stopped. Default 2 000 ms. */
  killGraceMs?: number | undefined;
  /** Called with the child once it started, so an owner can kill it at shutdown. */
  track?: ((group: ProcessGroup) => () => void) | undefined;
  /** The wrapper argv[0] is (bubblewrap), when what it starts leaves the process group. */
  wrapper?: HostLaunchWrapper | undefined;
}

/**
 * Starts a long-lived host process in its own process group with piped stdio.
 * @throws WsError `NOT_FOUND` when the executable or `cwd` is missing.
 */
export async function spawnHostProcess(
  argv: readonly string[],
  options: HostSpawnOptions,
): Promise<SandboxProcess> {
  assertArgv(argv);
  if (options.signal?.aborted) throw abortError(options.signal);
  const graceMs = options.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  const [command, ...args] = argv as [string, ...string[]];
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env,
    detached: true,
    stdio: hostStdio('pipe', options.wrapper),
  });
  attachWrapper(child, options.wrapper);
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', () => resolve());
    child.once('error', (error: NodeJS.ErrnoException) => {
      if (child.pid !== undefined) return;
      if (error.code === 'ENOENT') {
        reject(
          new WsError(
            'NOT_FOUND',
            `Cannot start ${command}: the executable or the working directory ${options.cwd} does not exist`,
            { cause: error },
          ),
        );
      } else {
        reject(fromErrno(error, `Starting ${command} failed`));
      }
    });
  });
  const stdin = child.stdin!;
  stdin.on('error', () => {});
  const exited = new Promise<ProcessExit>((resolve) => {
    child.once('exit', (code, signal) => {
      const signalNo = signalNumber(signal);
      resolve({
        exitCode: code ?? (signalNo !== undefined ? 128 + signalNo : -1),
        signal: signal ?? undefined,
      });
    });
  });
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= terminateGroup(child.pid, exited, graceMs, options.wrapper);
    return stopping;
  };
  const untrack = options.track?.({ stop });
  void exited.then(() => untrack?.());
  const onAbort = () => void stop();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  // An abort while the command was starting fired no listener: act on it now.
  if (options.signal?.aborted) onAbort();
  void exited.then(() => options.signal?.removeEventListener('abort', onAbort));
  return {
    pid: child.pid,
    stdout: child.stdout! as AsyncIterable<Uint8Array>,
    stderr: child.stderr! as AsyncIterable<Uint8Array>,
    write(chunk: Uint8Array | string): Promise<void> {
      return new Promise((resolve, reject) => {
        if (stdin.destroyed || stdin.writableEnded) {
          reject(new WsError('CONFLICT', 'The process no longer accepts input'));
          return;
        }
        stdin.write(chunk, (error) =>
          error ? reject(fromErrno(error, 'Writing to the process failed')) : resolve(),
        );
      });
    },
    async closeStdin(): Promise<void> {
      if (!stdin.writableEnded) stdin.end();
    },
    async kill(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
      await signalGroup(child.pid, signal, options.wrapper);
    },
    exited,
    async [Symbol.asyncDispose](): Promise<void> {
      await stop();
      await exited;
    },
  };
}
