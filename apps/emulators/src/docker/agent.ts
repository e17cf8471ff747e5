import { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { agentProgram } from './agent-program.js';
import { AGENT_MOUNT, listenForAgent } from './agent-socket.js';
import { FrameDemuxer } from './exec.js';

/**
 * The host's side of the in-container agent (see `agent-program.ts`): one per running container,
 * started on its first command, after which commands cost a fork in the container instead of an
 * engine exec. What it returns looks like an engine exec: a stream of the engine's multiplexed frames
 * and a handle whose `inspect()` says whether the command runs and how it ended.
 *
 * Everything the agent sends is treated as hostile input: frames are bounded, and an agent that
 * misbehaves or dies only ends the commands it started (their exit code is then unknown, -1) and is
 * replaced on the next command; one that keeps dying is given up for the engine's exec.
 */

const MAX_PAYLOAD = 1 << 20;
const HELLO_TIMEOUT_MS = 20_000;
const MAX_DEATHS = 3;
// `$2` and `$3`: the socket to talk over and the token to say (none: stdin and stdout).
const BOOT = [
  'command -v node >/dev/null 2>&1 || exit 97',
  'if [ "$#" -gt 1 ]; then exec node -e "$1" "$2" "$3"; fi',
  'exec node -e "$1"',
].join('\n');
const SOURCE = `(${agentProgram.toString()})()`;
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

enum ToAgent {
  Start = 1,
  Stdin = 2,
  StdinEnd = 3,
  Ack = 4,
  Detach = 5,
}
enum FromAgent {
  Hello = 0,
  Started = 1,
  Stdout = 2,
  Stderr = 3,
  Exit = 4,
  StdinAck = 5,
  Failed = 6,
}

export interface AgentExecOptions {
  user?: string;
  env?: readonly string[];
  stdin?: boolean;
  workingDir?: string;
}

/** What `inspect()` of an engine exec says that the emulators read. */
export interface ExecState {
  Running: boolean;
  ExitCode: number | null;
  Pid?: number;
}

/** An exec started by the agent: the engine exec's `inspect()`, and no `resize` (no TTY). */
export class AgentExec {
  pid = 0;
  exitCode: number | null = null;
  ended = false;

  inspect(): Promise<ExecState> {
    return Promise.resolve({ Running: !this.ended, ExitCode: this.exitCode, Pid: this.pid });
  }

  resize(_size: { h: number; w: number }): Promise<never> {
    return Promise.reject(new Error('an exec started by the sandbox agent has no TTY to resize'));
  }
}

function frame(type: number, id: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(9);
  header.writeUInt8(type, 0);
  header.writeUInt32BE(id, 1);
  header.writeUInt32BE(payload.length, 5);
  return Buffer.concat([header, payload]);
}

/** The engine's non-TTY exec framing, so consumers read agent execs exactly like engine execs. */
function engineFrame(channel: 1 | 2, payload: Buffer): Buffer {
  const header = Buffer.alloc(8);
  header.writeUInt8(channel, 0);
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

class AgentStream extends Duplex {
  private unacked = 0;
  /** Input sent and not yet handed to the command, and the write waiting for room in that window. */
  private inputInFlight = 0;
  private waitingWrite: (() => void) | undefined;

  constructor(
    private readonly agent: ContainerAgent,
    private readonly id: number,
    private readonly exec: AgentExec,
  ) {
    super({ allowHalfOpen: false, readableHighWaterMark: MAX_PAYLOAD });
  }

  output(channel: 1 | 2, payload: Buffer): void {
    if (this.destroyed || this.readableEnded) return;
    this.unacked += payload.length;
    if (this.push(engineFrame(channel, payload))) this.ack();
  }

  finish(): void {
    this.exec.ended = true;
    this.releaseWrite();
    if (!this.destroyed) this.push(null);
  }

  inputHandedOn(bytes: number): void {
    this.inputInFlight = Math.max(0, this.inputInFlight - bytes);
    if (this.inputInFlight < MAX_PAYLOAD) this.releaseWrite();
  }

  private releaseWrite(): void {
    const waiting = this.waitingWrite;
    this.waitingWrite = undefined;
    waiting?.();
  }

  private ack(): void {
    if (this.unacked === 0) return;
    const bytes = Buffer.alloc(4);
    bytes.writeUInt32BE(this.unacked, 0);
    this.unacked = 0;
    this.agent.send(ToAgent.Ack, this.id, bytes);
  }

  override _read(): void {
    this.ack();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.exec.ended) {
      callback();
      return;
    }
    for (let offset = 0; offset < chunk.length; offset += MAX_PAYLOAD) {
      this.agent.send(ToAgent.Stdin, this.id, chunk.subarray(offset, offset + MAX_PAYLOAD));
    }
    this.inputInFlight += chunk.length;
    // The next write waits until the command has taken all but one window of what was sent.
    if (this.inputInFlight < MAX_PAYLOAD) callback();
    else this.waitingWrite = () => callback();
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (!this.exec.ended) this.agent.send(ToAgent.StdinEnd, this.id, Buffer.alloc(0));
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // The command goes on until its output pipes close on it; its exit is still recorded.
    if (!this.exec.ended) this.agent.send(ToAgent.Detach, this.id, Buffer.alloc(0));
    callback(error);
  }
}

interface Pending {
  exec: AgentExec;
  stream: AgentStream;
  started?: { resolve: () => void; reject: (error: Error) => void };
}

export class ContainerAgent {
  private nextId = 1;
  private readonly execs = new Map<number, Pending>();
  private pending: Buffer = Buffer.alloc(0);
  private hello: { resolve: () => void; reject: (error: Error) => void } | undefined;
  private greeted = false;
  alive = true;

  private constructor(
    private readonly channel: Duplex,
    private readonly defaults: { env: string[]; cwd: string },
    private readonly onDeath: () => void,
  ) {}

  /** The agent's frames come on `channel` itself (a socket), not inside an engine exec's framing. */
  private direct = false;
  /** With a socket: the engine exec the agent runs in, whose end is the agent's. */
  private process: Duplex | undefined;

  /**
   * Starts the agent in a container through one engine exec (`engineExec`), as `user` (the image's
   * user when undefined); undefined when the container cannot run it (no node in the image, no such
   * user) or it did not answer in time.
   */
  static async launch(
    container: Docker.Container,
    user: string | undefined,
    engineExec: (argv: readonly string[], options: AgentExecOptions) => Promise<{ stream: Duplex }>,
    onDeath: () => void,
  ): Promise<ContainerAgent | undefined> {
    const info = await container.inspect();
    const env = [...(info.Config.Env ?? [])];
    if (!env.some((pair) => pair.startsWith('PATH='))) env.unshift(`PATH=${DEFAULT_PATH}`);
    if (!env.some((pair) => pair.startsWith('HOSTNAME='))) env.push(`HOSTNAME=${info.Config.Hostname}`);
    const defaults = { env, cwd: info.Config.WorkingDir || '/' };
    // The folder's host side, when the container has one: the agent then talks over a socket there.
    const folder = info.Mounts?.find((mount) => mount.Destination === AGENT_MOUNT)?.Source;
    const listener = folder ? await listenForAgent(folder) : undefined;
    const argv = ['sh', '-c', BOOT, 'sh', SOURCE, ...(listener ? [listener.path, listener.token] : [])];
    let exec: { stream: Duplex };
    try {
      exec = await engineExec(argv, {
        stdin: listener === undefined,
        ...(user !== undefined ? { user } : {}),
      });
    } catch (error) {
      listener?.close();
      throw error;
    }
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('the sandbox agent did not answer')), HELLO_TIMEOUT_MS);
    });
    let agent: ContainerAgent;
    if (listener) {
      // The exec's stream stays open while the agent runs: its end is the agent's (no node, killed).
      // Nothing is read from it but what node itself may say (a warning), drained.
      exec.stream.resume();
      const ended = new Promise<never>((_, reject) => {
        const gone = () => reject(new Error('the sandbox agent ended'));
        exec.stream.on('end', gone);
        exec.stream.on('close', gone);
        exec.stream.on('error', gone);
      });
      ended.catch(() => {});
      const acceptance = listener.accepted(HELLO_TIMEOUT_MS);
      acceptance.catch(() => {});
      try {
        const { socket, rest } = await Promise.race([acceptance, ended, timeout]);
        agent = new ContainerAgent(socket, defaults, onDeath);
        agent.direct = true;
        agent.process = exec.stream;
        ended.catch(() => agent.kill());
        agent.listen(rest);
        socket.resume();
      } catch {
        clearTimeout(timer);
        listener.close();
        exec.stream.destroy();
        return undefined;
      }
    } else {
      agent = new ContainerAgent(exec.stream, defaults, onDeath);
      agent.listen();
    }
    const ready = new Promise<void>((resolve, reject) => {
      agent.hello = { resolve, reject };
      if (agent.greeted) resolve();
    });
    try {
      await Promise.race([ready, timeout]);
      return agent;
    } catch {
      agent.kill();
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }

  private listen(first?: Buffer): void {
    if (this.direct) {
      if (first && first.length > 0) this.receive(first);
      this.channel.on('data', (chunk: Buffer) => {
        if (this.alive) this.receive(chunk);
      });
    } else {
      // The engine's framing around the agent's stdout (1) and stderr (2, which is not read).
      const demuxer = new FrameDemuxer((channel, payload) => {
        if (channel === 1 && this.alive) this.receive(payload);
      });
      this.channel.on('data', (chunk: Buffer) => demuxer.push(chunk));
    }
    const dead = () => this.kill();
    this.channel.on('end', dead);
    this.channel.on('close', dead);
    this.channel.on('error', dead);
  }

  private receive(chunk: Buffer): void {
    this.pending = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    while (this.pending.length >= 9) {
      const length = this.pending.readUInt32BE(5);
      if (length > MAX_PAYLOAD) {
        this.kill();
        return;
      }
      if (this.pending.length < 9 + length) return;
      const type = this.pending.readUInt8(0);
      const id = this.pending.readUInt32BE(1);
      const payload = Buffer.from(this.pending.subarray(9, 9 + length));
      this.pending = this.pending.subarray(9 + length);
      try {
        this.onFrame(type, id, payload);
      } catch {
        this.kill();
        return;
      }
    }
  }

  private onFrame(type: number, id: number, payload: Buffer): void {
    if (type === FromAgent.Hello) {
      this.greeted = true;
      this.hello?.resolve();
      this.hello = undefined;
      return;
    }
    const entry = this.execs.get(id);
    if (!entry) return;
    switch (type) {
      case FromAgent.Started: {
        const { pid } = JSON.parse(payload.toString('utf8')) as { pid: unknown };
        entry.exec.pid = typeof pid === 'number' ? pid : 0;
        entry.started?.resolve();
        entry.started = undefined;
        return;
      }
      case FromAgent.Failed: {
        const { message } = JSON.parse(payload.toString('utf8')) as { message: unknown };
        this.execs.delete(id);
        entry.exec.ended = true;
        entry.started?.reject(new Error(`exec failed: ${String(message).slice(0, 1000)}`));
        entry.started = undefined;
        return;
      }
      case FromAgent.StdinAck:
        entry.stream.inputHandedOn(payload.readUInt32BE(0));
        return;
      case FromAgent.Stdout:
      case FromAgent.Stderr:
        entry.stream.output(type === FromAgent.Stdout ? 1 : 2, payload);
        return;
      case FromAgent.Exit: {
        const { code } = JSON.parse(payload.toString('utf8')) as { code: unknown };
        entry.exec.exitCode = typeof code === 'number' && Number.isInteger(code) ? code : -1;
        this.execs.delete(id);
        entry.stream.finish();
        return;
      }
    }
  }

  send(type: ToAgent, id: number, payload: Buffer, callback?: () => void): void {
    if (!this.alive || this.channel.destroyed) {
      callback?.();
      return;
    }
    this.channel.write(frame(type, id, payload), callback ? () => callback() : undefined);
  }

  /** Starts a command through the agent, as `startExec` would through the engine. */
  async start(
    argv: readonly string[],
    options: AgentExecOptions,
  ): Promise<{ exec: AgentExec; stream: Duplex }> {
    if (!this.alive) throw new Error('the sandbox agent ended');
    const id = this.nextId++;
    const exec = new AgentExec();
    const stream = new AgentStream(this, id, exec);
    const started = new Promise<void>((resolve, reject) => {
      this.execs.set(id, { exec, stream, started: { resolve, reject } });
    });
    const request = {
      argv: [...argv],
      env: [...this.defaults.env, ...(options.env ?? [])],
      cwd: options.workingDir ?? this.defaults.cwd,
      stdin: options.stdin ?? false,
    };
    this.send(ToAgent.Start, id, Buffer.from(JSON.stringify(request)));
    await started;
    return { exec, stream };
  }

  /** Ends the agent's channel; the commands it started end for their readers (exit code unknown). */
  kill(): void {
    if (!this.alive) return;
    this.alive = false;
    this.channel.destroy();
    this.process?.destroy();
    this.hello?.reject(new Error('the sandbox agent ended'));
    this.hello = undefined;
    for (const entry of this.execs.values()) {
      entry.started?.reject(new Error('the sandbox agent ended before the command started'));
      entry.exec.ended = true;
      entry.stream.finish();
    }
    this.execs.clear();
    // One that never answered stays unused for its container (see `agentFor`); one that answered and
    // then ended is replaced on the next command.
    if (this.greeted) this.onDeath();
  }
}

const agents = new Map<string, Promise<ContainerAgent | undefined>>();
const deaths = new Map<string, number>();
const paused = new Set<string>();

/** Whether execs may go through an agent at all (`WS_EMULATOR_AGENT=0` sends every one to the engine). */
function enabled(): boolean {
  return process.env.WS_EMULATOR_AGENT !== '0';
}

/**
 * The container's agent for `user` (the image's user when undefined), started on first use; undefined when commands must go through the engine
 * (agents disabled, the container paused, no node in its image, or its agent died too often).
 */
export function agentFor(
  container: Docker.Container,
  user: string | undefined,
  engineExec: (argv: readonly string[], options: AgentExecOptions) => Promise<{ stream: Duplex }>,
): Promise<ContainerAgent | undefined> {
  if (!enabled() || paused.has(container.id)) return Promise.resolve(undefined);
  const id = `${container.id}\0${user ?? ''}`;
  if ((deaths.get(id) ?? 0) >= MAX_DEATHS) return Promise.resolve(undefined);
  const known = agents.get(id);
  if (known) return known;
  const starting = ContainerAgent.launch(container, user, engineExec, () => {
    if (agents.get(id) !== starting) return;
    agents.delete(id);
    deaths.set(id, (deaths.get(id) ?? 0) + 1);
    if (deaths.size > 10_000) deaths.delete(deaths.keys().next().value as string);
  }).catch(() => undefined);
  agents.set(id, starting);
  // A container that cannot run one keeps `undefined` here: the engine serves it from then on.
  return starting;
}

/**
 * Marks a container frozen (or thawed): while it is, commands go to the engine, which refuses them
 * as it refuses any exec in a paused container, instead of waiting on a frozen agent.
 */
export function markPaused(container: Docker.Container, frozen: boolean): void {
  if (frozen) paused.add(container.id);
  else paused.delete(container.id);
}
