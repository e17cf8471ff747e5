import { type ChildProcess, type StdioOptions, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { constants as osConstants } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { abortError, fromErrno, WsError } from '../contracts/errors.js';
import {
  DEFAULT_MAX_OUTPUT_BYTES,
  type ExecInput,
  type ExecResult,
  type OutputListener,
  type ProcessExit,
  type SandboxProcess,
} from '../contracts/sandbox.js';
import { createExecResult, normalizeInput, OutputCollector } from './exec-result.js';

/**
 * Running argv as host processes, each in its own process group, is what both the local and the
 * bubblewrap backends do; this module does it once for both.
 */

/** Options of {@link runHostCommand}. `cwd` and `env` are final: nothing is resolved or merged here. */
export interface HostCommandOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  stdin?: ExecInput | undefined;
  timeoutMs?: number | undefined;
  signal?: AbortSignal | undefined;
  onStdout?: OutputListener | undefined;
  onStderr?: OutputListener | undefined;
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

/** A started process group that an owner may stop. */
export interface ProcessGroup {
  stop(): Promise<void>;
  /** False once the group has no process left (then its owner may forget it). */
  alive?(): boolean;
}

// After the direct child exits, its pipes may still be held open by a background grandchild (`cmd &`).
// The result waits while output keeps coming, and stops waiting after this long without any.
const PIPE_IDLE_AFTER_EXIT_MS = 200;
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

/**
 * True while the process group led by `pid` has a running process in it. A zombie (a member that
 * exited and waits for its parent to collect it) does not count: where nobody collects orphans
 * promptly (a container whose PID 1 is node), a group of zombies would otherwise look alive until
 * every stop ran out its grace time. Zombies are told apart through `/proc` on Linux; elsewhere any
 * member counts.
 */
export function groupAlive(pid: number | undefined): boolean {
  return groupExists(pid) && (process.platform !== 'linux' || groupHasLiveMember(pid as number));
}

/** True while the group led by `pid` has any member, zombies included: one signal, no `/proc` scan. */
function groupExists(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(-pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether `/proc` lists a member of group `pgid` that is not a zombie (true when `/proc` cannot tell). */
function groupHasLiveMember(pgid: number): boolean {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return true;
  }
  for (const entry of entries) {
    if (entry.charCodeAt(0) < 48 || entry.charCodeAt(0) > 57) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
    } catch {
      continue; // gone meanwhile
    }
    // `pid (comm) state ppid pgrp …`; comm may hold spaces and parentheses, so split after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === pgid && fields[0] !== 'Z') return true;
  }
  return false;
}

/**
 * Resolves once the group led by `pid` has no process left (polled), or after `limitMs`. The poll
 * keeps the event loop alive: a caller awaiting a stop (`close()`) must not see the process exit
 * first, with its group's members never sent SIGKILL.
 */
function groupEmptied(pid: number | undefined, limitMs: number): Promise<void> {
  const deadline = Date.now() + limitMs;
  return new Promise((resolve) => {
    const poll = () => {
      if (!groupAlive(pid) || Date.now() >= deadline) resolve();
      else setTimeout(poll, 25);
    };
    poll();
  });
}

/** Sends `signal` to the process group led by `pid`, ignoring a group that is already gone. */
export function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group has already exited.
  }
}

/**
 * Stops a process the way every backend does: `send('TERM')` now, `send('KILL')` once `graceMs` pass
 * without `exited` settling, and `send('KILL')` after it settles too, so that members of a process
 * group that ignore SIGTERM do not outlive their leader. Resolves once the process exited or was
 * sent SIGKILL; until then the host process does not exit on its own. `send` may be asynchronous (a
 * signal sent through another command).
 */
export function stopWithGrace(
  send: (signal: 'TERM' | 'KILL') => unknown,
  exited: Promise<unknown>,
  graceMs: number,
): Promise<void> {
  const deliver = (signal: 'TERM' | 'KILL') => Promise.resolve(send(signal)).catch(() => {});
  const terminated = deliver('TERM');
  return new Promise((resolve) => {
    // Not unref'd: the process stays up until SIGKILL went out, so nothing outlives it.
    const timer = setTimeout(() => {
      void terminated.then(() => deliver('KILL')).then(() => resolve());
    }, graceMs);
    exited.then(
      () => {
        clearTimeout(timer);
        void terminated.then(() => deliver('KILL')).then(() => resolve());
      },
      () => {},
    );
  });
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

/**
 * The process groups one sandbox started and has not seen exit, so that closing it stops them all.
 * Pass `track` as {@link HostCommandOptions.track} / {@link HostSpawnOptions.track}.
 */
export class ProcessGroups {
  private readonly groups = new Set<ProcessGroup>();

  /** Remembers a group until the function it returns is called (or the group is found empty). */
  readonly track = (group: ProcessGroup): (() => void) => {
    for (const known of this.groups) if (known.alive?.() === false) this.groups.delete(known);
    this.groups.add(group);
    return () => this.groups.delete(group);
  };

  /** Stops every remembered group (SIGTERM, then SIGKILL after the grace time) and forgets them. */
  async stopAll(): Promise<void> {
    const groups = [...this.groups];
    this.groups.clear();
    await Promise.all(groups.map((group) => group.stop()));
  }
}

function signalNumber(signal: NodeJS.Signals | null): number | undefined {
  return signal ? (osConstants.signals as Record<string, number>)[signal] : undefined;
}

async function pumpInput(child: ChildProcess, input: ExecInput | undefined): Promise<void> {
  const stdin = child.stdin;
  if (!stdin) return;
  stdin.on('error', () => {
    // EPIPE: the process exited without reading all of its input; that is its business.
  });
  if (input === undefined) {
    stdin.end();
    return;
  }
  const normalized = normalizeInput(input);
  if (normalized instanceof Uint8Array) {
    stdin.end(normalized);
    return;
  }
  for await (const chunk of normalized) {
    if (stdin.destroyed || stdin.writableEnded) return;
    if (!stdin.write(chunk)) await waitForDrain(stdin);
  }
  stdin.end();
}

function waitForDrain(stream: Writable): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stream.off('drain', done);
      stream.off('close', done);
      stream.off('error', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('close', done);
    stream.on('error', done);
  });
}

interface StreamReader {
  collector: OutputCollector;
  lastActivity: number;
  paused: boolean;
  ended: boolean;
  listenerError?: unknown;
}

function readStream(
  stream: Readable | null,
  limit: number,
  listener: OutputListener | undefined,
  onListenerError: (error: unknown) => void,
): StreamReader {
  const reader: StreamReader = {
    collector: new OutputCollector(limit),
    lastActivity: Date.now(),
    paused: false,
    ended: stream === null,
  };
  if (!stream) return reader;
  stream.on('data', (chunk: Buffer) => {
    reader.lastActivity = Date.now();
    reader.collector.push(chunk);
    if (!listener) return;
    let pending: void | Promise<void>;
    try {
      pending = listener(chunk);
    } catch (error) {
      onListenerError(error);
      return;
    }
    if (pending && typeof pending.then === 'function') {
      reader.paused = true;
      stream.pause();
      pending.then(
        () => {
          reader.paused = false;
          reader.lastActivity = Date.now();
          stream.resume();
        },
        (error: unknown) => onListenerError(error),
      );
    }
  });
  const finish = () => {
    reader.ended = true;
  };
  stream.on('end', finish);
  stream.on('close', finish);
  stream.on('error', finish);
  return reader;
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
    if ('error' in outcome) return await spawnFailure(command, options.cwd, outcome.error);
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

/**
 * Waits for the output pipes to close after the process exited. They normally close at once; when a
 * background grandchild still holds them, the wait ends once no output came for a while.
 */
async function drainAfterExit(child: ChildProcess, readers: StreamReader[]): Promise<void> {
  if (readers.every((reader) => reader.ended)) return;
  let timer: NodeJS.Timeout | undefined;
  const closed = new Promise<void>((resolve) => {
    const check = () => {
      if (readers.every((reader) => reader.ended)) resolve();
    };
    child.stdout?.once('close', check);
    child.stderr?.once('close', check);
  });
  const idle = new Promise<void>((resolve) => {
    const poll = () => {
      const quiet = readers.every(
        (reader) =>
          reader.ended || (!reader.paused && Date.now() - reader.lastActivity >= PIPE_IDLE_AFTER_EXIT_MS),
      );
      if (quiet) {
        child.stdout?.destroy();
        child.stderr?.destroy();
        resolve();
      } else timer = setTimeout(poll, PIPE_IDLE_AFTER_EXIT_MS / 4);
    };
    timer = setTimeout(poll, PIPE_IDLE_AFTER_EXIT_MS / 4);
  });
  await Promise.race([closed, idle]);
  if (timer) clearTimeout(timer);
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
  cwd: string;
  env: NodeJS.ProcessEnv;
  signal?: AbortSignal | undefined;
  killGraceMs?: number | undefined;
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
