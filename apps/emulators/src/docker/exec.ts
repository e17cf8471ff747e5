import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { agentFor, markPaused } from './agent.js';

type DockerError = Error & { statusCode?: number; json?: { message?: string } | null; reason?: string };

/** The engine's own message of a dockerode error, when it has one. */
export function dockerMessage(error: unknown): string {
  const typed = error as DockerError;
  return typed?.json?.message ?? typed?.message ?? String(error);
}

/** The HTTP status of a dockerode error (404 missing, 409 conflict such as a paused container). */
export function dockerStatus(error: unknown): number | undefined {
  return (error as DockerError)?.statusCode;
}

/** Output channels of a non-TTY exec stream: 1 stdout, 2 stderr. */
export type ExecChannel = 1 | 2;

/**
 * Splits the multiplexed stream of a non-TTY exec (8-byte header: channel, 3 zero bytes, big-endian
 * payload length) into channel payloads, across arbitrary chunk boundaries.
 */
export class FrameDemuxer {
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly onFrame: (channel: ExecChannel, payload: Buffer) => void) {}

  push(chunk: Buffer): void {
    let buffer = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    while (buffer.length >= 8) {
      const size = buffer.readUInt32BE(4);
      if (buffer.length < 8 + size) break;
      const channel = buffer[0];
      const payload = buffer.subarray(8, 8 + size);
      if ((channel === 1 || channel === 2) && payload.length > 0) this.onFrame(channel, payload);
      buffer = buffer.subarray(8 + size);
    }
    this.pending = buffer;
  }
}

export interface ExecStartOptions {
  user?: string;
  env?: readonly string[];
  stdin?: boolean;
  tty?: boolean;
  workingDir?: string;
}

// Execs being created or started, per container. Freezing a container while the engine starts an exec
// in it leaves the exec's runc init frozen half-way, and the engine then hangs on that container
// (remove, inspect, unpause): a pause waits for these first (see `execStartsSettled`).
const starting = new Map<string, { count: number; settled: (() => void)[] }>();

function beginStart(id: string): () => void {
  const entry = starting.get(id) ?? { count: 0, settled: [] };
  starting.set(id, entry);
  entry.count++;
  let done = false;
  return () => {
    if (done) return;
    done = true;
    entry.count--;
    if (entry.count > 0) return;
    starting.delete(id);
    for (const resolve of entry.settled) resolve();
  };
}

/**
 * Pauses a container once no exec is being started in it, and sends its commands to the engine
 * (which refuses them) until `unpauseContainer`.
 */
export async function pauseContainer(container: Docker.Container): Promise<void> {
  await execStartsSettled(container);
  markPaused(container, true);
  // The engine gives up freezing a busy container after a while ("unable to freeze"): a vendor's
  // pause does not fail on a busy sandbox, so the freeze is tried again, a few times, later.
  for (let attempt = 1; ; attempt++) {
    try {
      await container.pause();
      return;
    } catch (error) {
      if (attempt >= 4 || !/unable to freeze/i.test(String((error as Error)?.message))) {
        markPaused(container, false);
        throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** attempt));
    }
  }
}

/** Unpauses a container (see `pauseContainer`). */
export async function unpauseContainer(container: Docker.Container): Promise<void> {
  try {
    await container.unpause();
  } finally {
    markPaused(container, false);
  }
}

/** Resolves once no exec is being started in the container (by this process): safe to pause it. */
export function execStartsSettled(container: Docker.Container): Promise<void> {
  const entry = starting.get(container.id);
  if (!entry) return Promise.resolve();
  return new Promise((resolve) => entry.settled.push(resolve));
}

/** Waits until the engine reports an exec running or ended (its start is over), for at most ~2 s. */
async function startOver(exec: Docker.Exec): Promise<void> {
  for (let attempt = 0; attempt < 40; attempt++) {
    const info = await exec.inspect().catch(() => undefined);
    if (!info || info.Running || info.ExitCode !== null) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** An exec's handle: the engine's own, or one the container's agent started (see agent.ts). */
export interface ExecHandle {
  inspect(): Promise<{ Running: boolean; ExitCode: number | null }>;
  resize(size: { h: number; w: number }): Promise<unknown>;
}

/**
 * Starts a command in a running container and hands back its stream, in the engine's exec framing
 * (non-TTY: multiplexed stdout and stderr; TTY: raw). A non-TTY command goes through the container's
 * agent when it has one (a fork in the container instead of an engine exec); a TTY, a paused
 * container and an image without node go through the engine.
 */
export async function startExec(
  container: Docker.Container,
  argv: readonly string[],
  options: ExecStartOptions = {},
): Promise<{ exec: ExecHandle; stream: Duplex }> {
  if (!options.tty) {
    const { user, env, stdin, workingDir } = options;
    const agent = await agentFor(container, user, (agentArgv, agentOptions) =>
      startEngineExec(container, agentArgv, agentOptions),
    );
    if (agent?.alive) {
      return agent.start(argv, {
        ...(env !== undefined ? { env } : {}),
        ...(stdin !== undefined ? { stdin } : {}),
        ...(workingDir !== undefined ? { workingDir } : {}),
      });
    }
  }
  return startEngineExec(container, argv, options);
}

/** Creates and starts an engine exec with a hijacked (raw, bidirectional) connection. */
async function startEngineExec(
  container: Docker.Container,
  argv: readonly string[],
  options: ExecStartOptions = {},
): Promise<{ exec: Docker.Exec; stream: Duplex }> {
  const settle = beginStart(container.id);
  let exec: Docker.Exec;
  let stream: Duplex;
  try {
    exec = await createExec(container, argv, options);
    // The start call must repeat Tty, or the engine multiplexes a TTY's output as if it had none.
    stream = (await exec.start({
      hijack: true,
      stdin: options.stdin ?? false,
      Tty: options.tty ?? false,
    })) as Duplex;
  } catch (error) {
    settle();
    throw error;
  }
  void startOver(exec).finally(settle);
  return { exec, stream };
}

function createExec(
  container: Docker.Container,
  argv: readonly string[],
  options: ExecStartOptions,
): Promise<Docker.Exec> {
  return container.exec({
    Cmd: [...argv],
    AttachStdin: options.stdin ?? false,
    AttachStdout: true,
    AttachStderr: true,
    Tty: options.tty ?? false,
    ...(options.user !== undefined ? { User: options.user } : {}),
    ...(options.env && options.env.length > 0 ? { Env: [...options.env] } : {}),
    ...(options.workingDir !== undefined ? { WorkingDir: options.workingDir } : {}),
  });
}

/**
 * The exit code of an exec whose stream has ended. The engine can report it as still running for a
 * moment after the stream closes, so this polls briefly; -1 when it cannot tell.
 */
export async function execExitCode(exec: ExecHandle): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const info = await exec.inspect().catch(() => undefined);
    if (!info) return -1;
    if (!info.Running) return info.ExitCode ?? -1;
    await new Promise((resolve) => setTimeout(resolve, attempt < 10 ? 10 : 50));
  }
  return -1;
}

/** Resolves when a hijacked stream has ended or closed (never rejects). */
export function streamDone(stream: Duplex): Promise<void> {
  return new Promise((resolve) => {
    if (stream.readableEnded || stream.destroyed) {
      resolve();
      return;
    }
    stream.once('end', () => resolve());
    stream.once('close', () => resolve());
    stream.once('error', () => resolve());
  });
}

export interface RunResult {
  exitCode: number;
  stdout: Buffer;
  stderr: Buffer;
}

export interface RunOptions {
  user?: string;
  env?: readonly string[];
  /** Bytes for the command's stdin, which is closed after them; without it there is no stdin. */
  input?: Uint8Array | AsyncIterable<Uint8Array>;
  /** Receives stdout as it arrives instead of collecting it. */
  onStdout?: (chunk: Buffer) => void;
}

/** Runs a command to completion in a running container and collects what it printed. */
export async function runExec(
  container: Docker.Container,
  argv: readonly string[],
  options: RunOptions = {},
): Promise<RunResult> {
  const { exec, stream } = await startExec(container, argv, {
    stdin: options.input !== undefined,
    ...(options.user !== undefined ? { user: options.user } : {}),
    ...(options.env !== undefined ? { env: options.env } : {}),
  });
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  const demuxer = new FrameDemuxer((channel, payload) => {
    if (channel === 2) stderr.push(payload);
    else if (options.onStdout) options.onStdout(payload);
    else stdout.push(payload);
  });
  stream.on('data', (chunk: Buffer) => demuxer.push(chunk));
  const done = streamDone(stream);
  let feedError: unknown;
  if (options.input !== undefined) {
    try {
      await feed(stream, options.input);
    } catch (error) {
      feedError = error;
      stream.destroy();
    }
  }
  await done;
  stream.destroy();
  const exitCode = await execExitCode(exec);
  // A command that stopped reading its input explains itself through its exit status; a failed source
  // (say, an upload cut short) under a command that exited well is the error to report.
  if (feedError !== undefined && exitCode === 0) throw feedError;
  return { exitCode, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr) };
}

/** Writes input into an exec's stdin with backpressure, then half-closes it (EOF for the command). */
export async function feed(stream: Duplex, input: Uint8Array | AsyncIterable<Uint8Array>): Promise<void> {
  const chunks = input instanceof Uint8Array ? [input] : input;
  for await (const chunk of chunks) {
    if (stream.destroyed) throw new Error('the command stopped reading its input');
    if (!stream.write(chunk)) {
      await new Promise<void>((resolve, reject) => {
        const onDrain = () => {
          stream.off('close', onClose);
          resolve();
        };
        const onClose = () => {
          stream.off('drain', onDrain);
          reject(new Error('the command stopped reading its input'));
        };
        stream.once('drain', onDrain);
        stream.once('close', onClose);
      });
    }
  }
  stream.end();
}

/**
 * Starts a command and hands its stdout out as it comes, pausing the exec stream while the consumer
 * lags (so a large file passes through in bounded memory). Stopping the iteration early ends the exec.
 */
export async function streamStdout(
  container: Docker.Container,
  argv: readonly string[],
  options: { user?: string } = {},
): Promise<{ chunks: AsyncIterable<Buffer>; finished: Promise<{ exitCode: number; stderr: Buffer }> }> {
  const { exec, stream } = await startExec(container, argv, options);
  const stderr: Buffer[] = [];
  const queue: Buffer[] = [];
  let queued = 0;
  let ended = false;
  let wake: (() => void) | undefined;
  const demuxer = new FrameDemuxer((channel, payload) => {
    if (channel === 2) {
      stderr.push(payload);
      return;
    }
    queue.push(payload);
    queued += payload.length;
    if (queued > 1 << 20) stream.pause();
    wake?.();
  });
  stream.on('data', (chunk: Buffer) => demuxer.push(chunk));
  const done = streamDone(stream).then(() => {
    ended = true;
    wake?.();
  });
  async function* chunks(): AsyncGenerator<Buffer> {
    try {
      for (;;) {
        const next = queue.shift();
        if (next) {
          queued -= next.length;
          if (queued < 256 << 10 && stream.isPaused()) stream.resume();
          yield next;
          continue;
        }
        if (ended) return;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
    } finally {
      if (!ended) stream.destroy();
    }
  }
  const finished = done.then(async () => ({
    exitCode: await execExitCode(exec),
    stderr: Buffer.concat(stderr),
  }));
  return { chunks: chunks(), finished };
}

/** Kills the process group led by pid $1 (or the process alone); dash's kill takes no `--`. */
export const KILL_GROUP = 'kill -KILL "-$1" 2>/dev/null || kill -KILL "$1"';
