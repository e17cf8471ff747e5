import { randomBytes, randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { execExitCode, FrameDemuxer, KILL_GROUP, runExec, startExec, streamDone } from '../docker/exec.js';
import { shellQuote } from '../docker/shell-quote.js';
import { DaytonaHttpError } from './errors.js';
import type { SandboxAccount } from './sandbox-user.js';
import type { CommandBody, SessionCommandLogsBody } from './sdk-types.js';

export type OutputStream = 'stdout' | 'stderr';
export type LogEvent = { stream: OutputStream; data: Buffer } | { stream: 'end' };

/** One command run in a session, with everything it printed so far. */
export class SessionCommand {
  exitCode: number | undefined;
  readonly chunks: { stream: OutputStream; data: Buffer }[] = [];
  readonly finished: Promise<void>;
  private resolveFinished!: () => void;
  private readonly listeners = new Set<(event: LogEvent) => void>();

  constructor(
    readonly id: string,
    readonly command: string,
  ) {
    this.finished = new Promise((resolve) => {
      this.resolveFinished = resolve;
    });
  }

  get done(): boolean {
    return this.exitCode !== undefined;
  }

  append(stream: OutputStream, data: Buffer): void {
    if (data.length === 0) return;
    this.chunks.push({ stream, data });
    for (const listener of this.listeners) listener({ stream, data });
  }

  finish(exitCode: number): void {
    if (this.done) return;
    this.exitCode = exitCode;
    for (const listener of this.listeners) listener({ stream: 'end' });
    this.listeners.clear();
    this.resolveFinished();
  }

  /** Events from now on (read `chunks` first for what came before); returns the unsubscribe. */
  subscribe(listener: (event: LogEvent) => void): () => void {
    if (this.done) {
      listener({ stream: 'end' });
      return () => {};
    }
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  logs(): SessionCommandLogsBody {
    const pick = (stream?: OutputStream) =>
      Buffer.concat(
        this.chunks.filter((chunk) => !stream || chunk.stream === stream).map((chunk) => chunk.data),
      ).toString('utf8');
    return { output: pick(), stdout: pick('stdout'), stderr: pick('stderr') };
  }

  describe(): CommandBody {
    return { id: this.id, command: this.command, ...(this.done ? { exitCode: this.exitCode } : {}) };
  }
}

interface Run {
  command: SessionCommand;
  marker: Buffer;
  script: string;
  stdoutDone: boolean;
  stderrDone: boolean;
  /** The exit status the stdout marker carried. */
  status: number;
}

/** The length of the longest end of `buffer` that starts `marker` (it may complete in the next chunk). */
function partialMarker(buffer: Buffer, marker: Buffer): number {
  for (let length = Math.min(buffer.length, marker.length - 1); length > 0; length--) {
    if (buffer.subarray(buffer.length - length).equals(marker.subarray(0, length))) return length;
  }
  return 0;
}

const SHELL = 'if command -v bash >/dev/null 2>&1; then exec bash; else exec sh; fi';

/**
 * A persistent shell (one attached `docker exec`), as a Daytona session: commands run one after the
 * other in it, so `cd` and exported variables carry over. Each command is `eval`ed from one line
 * written to the shell's stdin and followed by a random marker on stdout (with its exit status) and on
 * stderr, which splits the streams into per-command logs. Input sent to a running command is written
 * to the same stdin, which the command reads.
 */
export class Session {
  readonly commands = new Map<string, SessionCommand>();
  ended = false;
  private pid: number | undefined;
  private current: Run | undefined;
  private readonly queue: Run[] = [];
  private readonly buffers: Record<OutputStream, Buffer> = {
    stdout: Buffer.alloc(0),
    stderr: Buffer.alloc(0),
  };

  private constructor(
    readonly id: string,
    private readonly container: Docker.Container,
    private readonly account: SandboxAccount,
    private readonly stream: Duplex,
  ) {}

  static async open(
    id: string,
    container: Docker.Container,
    account: SandboxAccount,
    workDir: string,
  ): Promise<Session> {
    const { exec, stream } = await startExec(container, ['sh', '-c', SHELL], {
      stdin: true,
      user: account.name,
      workingDir: workDir,
    });
    const session = new Session(id, container, account, stream);
    const demuxer = new FrameDemuxer((channel, payload) =>
      session.onOutput(channel === 1 ? 'stdout' : 'stderr', payload),
    );
    stream.on('data', (chunk: Buffer) => demuxer.push(chunk));
    void streamDone(stream).then(async () => session.onEnd(await execExitCode(exec)));
    // The shell's pid leads the process group that deleting the session kills.
    const probe = session.enqueue('printf %s "$$"', false);
    await probe.finished;
    session.pid = Number(probe.logs().stdout) || undefined;
    return session;
  }

  /** Queues a command; it starts when the ones before it have ended. */
  execute(command: string): SessionCommand {
    if (this.ended) throw new DaytonaHttpError(410, `session ${this.id} has ended`, 'SESSION_ENDED');
    return this.enqueue(command, true);
  }

  /** Writes `data` to the stdin of a running command. */
  async sendInput(commandId: string, data: string): Promise<void> {
    const command = this.commands.get(commandId);
    if (!command) throw new DaytonaHttpError(404, `command ${commandId} not found`, 'PROCESS_NOT_FOUND');
    if (command.done || this.current?.command !== command) {
      const why = command.done ? 'has already completed' : 'has not started yet';
      throw new DaytonaHttpError(410, `command ${commandId} ${why}`, 'COMMAND_ALREADY_COMPLETED');
    }
    await new Promise<void>((resolve, reject) =>
      this.stream.write(data, (error) => (error ? reject(error) : resolve())),
    );
  }

  /** Ends the shell and everything it started (its process group). */
  async close(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    if (this.pid !== undefined) {
      await runExec(this.container, ['sh', '-c', KILL_GROUP, 'sh', String(this.pid)], {
        user: this.account.name,
      }).catch(() => {});
    }
    this.stream.destroy();
    this.onEnd(-1);
  }

  private enqueue(command: string, visible: boolean): SessionCommand {
    const entry = new SessionCommand(randomUUID(), command);
    if (visible) this.commands.set(entry.id, entry);
    const marker = `__ws_daytona_${randomBytes(12).toString('hex')}__`;
    const quoted = shellQuote(marker);
    const script = `eval ${shellQuote(command)}; __ws_rc=$?; printf '%s%s\\n' ${quoted} "$__ws_rc"; printf '%s' ${quoted} >&2\n`;
    this.queue.push({
      command: entry,
      marker: Buffer.from(marker),
      script,
      stdoutDone: false,
      stderrDone: false,
      status: -1,
    });
    this.next();
    return entry;
  }

  private next(): void {
    if (this.current || this.ended) return;
    const run = this.queue.shift();
    if (!run) return;
    this.current = run;
    this.stream.write(run.script);
    this.drain('stdout');
    this.drain('stderr');
  }

  private onOutput(stream: OutputStream, payload: Buffer): void {
    // Output while no command runs (a background job of an earlier one) belongs to none.
    if (!this.current) return;
    this.buffers[stream] = Buffer.concat([this.buffers[stream], payload]);
    this.drain(stream);
  }

  private drain(stream: OutputStream): void {
    const run = this.current;
    if (!run || (stream === 'stdout' ? run.stdoutDone : run.stderrDone)) return;
    const buffer = this.buffers[stream];
    const index = buffer.indexOf(run.marker);
    if (index < 0) {
      const keep = partialMarker(buffer, run.marker);
      run.command.append(stream, buffer.subarray(0, buffer.length - keep));
      this.buffers[stream] = buffer.subarray(buffer.length - keep);
      return;
    }
    run.command.append(stream, buffer.subarray(0, index));
    let rest = buffer.subarray(index + run.marker.length);
    if (stream === 'stdout') {
      const newline = rest.indexOf(0x0a);
      if (newline < 0) {
        this.buffers[stream] = buffer.subarray(index); // the status is still on its way
        return;
      }
      const status = Number(rest.subarray(0, newline).toString('ascii'));
      run.status = Number.isInteger(status) ? status : -1;
      rest = rest.subarray(newline + 1);
      run.stdoutDone = true;
    } else {
      run.stderrDone = true;
    }
    this.buffers[stream] = rest;
    if (run.stdoutDone && run.stderrDone) {
      this.current = undefined;
      run.command.finish(run.status);
      this.buffers.stdout = Buffer.alloc(0);
      this.buffers.stderr = Buffer.alloc(0);
      this.next();
    }
  }

  private onEnd(exitCode: number): void {
    this.ended = true;
    const run = this.current;
    this.current = undefined;
    if (run) {
      for (const stream of ['stdout', 'stderr'] as const) {
        if (!(stream === 'stdout' ? run.stdoutDone : run.stderrDone))
          run.command.append(stream, this.buffers[stream]);
      }
      run.command.finish(exitCode);
    }
    for (const queued of this.queue.splice(0)) queued.command.finish(-1);
  }
}

/** The sessions of one sandbox. */
export class SessionTable {
  private readonly sessions = new Map<string, Session>();

  async create(
    id: string,
    container: Docker.Container,
    account: SandboxAccount,
    workDir: string,
  ): Promise<Session> {
    if (this.sessions.has(id)) throw new DaytonaHttpError(409, `session ${id} already exists`, 'CONFLICT');
    const session = await Session.open(id, container, account, workDir);
    this.sessions.set(id, session);
    return session;
  }

  get(id: string): Session {
    const session = this.sessions.get(id);
    if (!session) throw new DaytonaHttpError(404, `session ${id} not found`, 'NOT_FOUND');
    return session;
  }

  list(): Session[] {
    return [...this.sessions.values()];
  }

  async delete(id: string): Promise<void> {
    const session = this.get(id);
    this.sessions.delete(id);
    await session.close();
  }

  /** Forgets every session (their processes are gone with the container, or are ended here). */
  async closeAll(): Promise<void> {
    const sessions = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(sessions.map((session) => session.close()));
  }
}
