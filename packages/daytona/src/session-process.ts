import { randomUUID } from 'node:crypto';
import type { Sandbox } from '@daytonaio/sdk';
import type { ProcessExit, SandboxProcess } from '@ws/core';
import { WsError } from '@ws/core';
import { type ChunkQueue, encodeUtf8, shellQuote } from '@ws/core/backend';
import { translateDaytonaError } from './errors.js';
import { followCommandLogs, type OutputHandlers } from './log-stream.js';

/**
 * Daytona's session commands take input as text and have no way to close a command's stdin, so a
 * process that needs input reads it through this relay. Each write arrives as one of:
 * - a line with a length, then that many characters of base64 (`head -c` reads exactly those, in
 *   blocks): any bytes;
 * - a line `=` and a count, then that many lines of printable ASCII, copied with the shell's own
 *   `read` and `printf` (nothing started per write: a small text write, such as a gateway's frame,
 *   costs no process in the sandbox);
 * - a line `.`: the end of input.
 * The relay feeds a FIFO the command reads; when the command exits, the relay goes too. $1 is the
 * command line (run by `sh -c`).
 */
export const RELAY = `d=$(mktemp -d) && mkfifo "$d/in" || exit 1
exec 3<&0
( while IFS= read -r n; do
  case "$n" in
  .) break ;;
  =*) k=\${n#=}; while [ "$k" -gt 0 ]; do IFS= read -r l || exit 0; printf '%s\\n' "$l"; k=$((k - 1)); done ;;
  *) head -c "$n" | base64 -d || break ;;
  esac
done <&3 >"$d/in" ) &
r=$!
exec 3<&-
sh -c "$1" sh <"$d/in" &
c=$!
wait "$c"; s=$?
kill "$r" 2>/dev/null; rm -rf -- "$d"; exit "$s"`;

/** Writes at most this big go as lines when they are printable ASCII lines (the shell reads a byte at a time). */
const LINES_MAX_BYTES = 8 * 1024;

/**
 * How `data` goes through the relay: as lines (`=count`, then the lines) when it is small and
 * printable ASCII ending in a newline, else as base64 after its length.
 */
export function relayFrame(data: Uint8Array): string {
  if (data.byteLength > 0 && data.byteLength <= LINES_MAX_BYTES && data[data.byteLength - 1] === 0x0a) {
    let lines = 0;
    let printable = true;
    for (const byte of data) {
      if (byte === 0x0a) lines++;
      else if (byte < 0x20 || byte > 0x7e) {
        printable = false;
        break;
      }
    }
    if (printable)
      return `=${lines}\n${Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('latin1')}`;
  }
  const encoded = Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64');
  return `${encoded.length}\n${encoded}`;
}

/** Requests of input at most this big (raw bytes), however many writes they gather. */
const BATCH_BYTES = 1024 * 1024;

/** A write waiting to be sent; no bytes: the end of input. */
interface Pending {
  bytes: Uint8Array | undefined;
  resolve(): void;
  reject(error: unknown): void;
}

/** A command running alone in its own Daytona session, followed over the toolbox's log WebSocket. */
export class SessionProcess {
  readonly exited: Promise<ProcessExit>;
  private readonly pending: Pending[] = [];
  private pumping = false;
  private inputClosed = false;
  private killed = false;
  private ended = false;

  private constructor(
    private readonly sandbox: Sandbox,
    readonly sessionId: string,
    readonly commandId: string,
    private readonly relay: boolean,
    followed: Promise<void>,
  ) {
    this.exited = followed
      .catch(() => {})
      .then(() => this.exitCode())
      .then(async (exit) => {
        this.ended = true;
        await this.sandbox.process.deleteSession(this.sessionId).catch(() => {});
        return exit;
      });
  }

  /**
   * Starts `line` (a shell command line) in a new session. With `stdin`, input goes through the relay
   * and `closeStdin` ends it; without, the command reads nothing.
   */
  static async start(
    sandbox: Sandbox,
    line: string,
    stdin: boolean,
    handlers: OutputHandlers,
  ): Promise<SessionProcess> {
    const sessionId = `ws-${randomUUID()}`;
    const command = stdin
      ? `sh -c ${shellQuote(RELAY)} sh ${shellQuote(line)}`
      : `sh -c ${shellQuote(line)} </dev/null`;
    let commandId: string | undefined;
    try {
      await sandbox.process.createSession(sessionId);
      const started = await sandbox.process.executeSessionCommand(sessionId, { command, runAsync: true });
      commandId = started.cmdId;
      if (!commandId) throw new Error('Daytona answered without a command id');
    } catch (error) {
      await sandbox.process.deleteSession(sessionId).catch(() => {});
      throw translateDaytonaError(error, 'starting a command');
    }
    const followed = followCommandLogs(sandbox, sessionId, commandId, handlers);
    return new SessionProcess(sandbox, sessionId, commandId, stdin, followed);
  }

  /** The exit code once the log stream ended (the service may record it a moment later). */
  private async exitCode(): Promise<ProcessExit> {
    for (let attempt = 0; attempt < 40 && !this.killed; attempt++) {
      try {
        const command = await this.sandbox.process.getSessionCommand(this.sessionId, this.commandId);
        if (command.exitCode !== undefined && command.exitCode !== null)
          return { exitCode: command.exitCode };
      } catch {
        break; // the session is gone: the process was killed with it
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return this.killed ? { exitCode: -1, signal: 'SIGKILL' } : { exitCode: -1 };
  }

  /**
   * Sends bytes to the command's stdin, in order. Writes made while a request is on its way go
   * together in the next one, so a stream of small writes (the gateway's frames) costs few requests.
   */
  write(bytes: Uint8Array): Promise<void> {
    if (!this.relay || this.inputClosed || this.ended)
      return Promise.reject(new WsError('CONFLICT', 'The process no longer accepts input'));
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ bytes, resolve, reject });
      void this.pump();
    });
  }

  /** Ends the command's input (idempotent), after what was written. */
  async closeStdin(): Promise<void> {
    if (!this.relay || this.inputClosed) return;
    this.inputClosed = true;
    await new Promise<void>((resolve) => {
      this.pending.push({ bytes: undefined, resolve, reject: () => resolve() });
      void this.pump();
    });
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.pending.length > 0) {
        const batch: Pending[] = [];
        let size = 0;
        let text = '';
        for (const next of this.pending) {
          if (batch.length > 0 && (next.bytes === undefined || size + next.bytes.byteLength > BATCH_BYTES))
            break;
          batch.push(next);
          if (next.bytes === undefined) break;
          size += next.bytes.byteLength;
        }
        this.pending.splice(0, batch.length);
        const data = Buffer.concat(batch.flatMap((item) => (item.bytes ? [item.bytes] : [])));
        if (data.byteLength > 0) text += relayFrame(data);
        if (batch.at(-1)?.bytes === undefined) text += '.\n';
        try {
          if (this.ended) throw new Error('the process has exited');
          if (text !== '')
            await this.sandbox.process.sendSessionCommandInput(this.sessionId, this.commandId, text);
          for (const item of batch) item.resolve();
        } catch (error) {
          const failure = new WsError('CONFLICT', 'The process no longer accepts input', { cause: error });
          for (const item of batch) item.reject(failure);
        }
      }
    } finally {
      this.pumping = false;
    }
  }

  /** Ends the session, and with it every process of the command (its process group). */
  async kill(): Promise<void> {
    this.killed = true;
    await this.sandbox.process.deleteSession(this.sessionId).catch(() => {});
  }

  /** This process as the contract's {@link SandboxProcess}, its output queued as it arrives. */
  static asSandboxProcess(
    process: SessionProcess,
    stdout: ChunkQueue,
    stderr: ChunkQueue,
    signal: AbortSignal | undefined,
  ): SandboxProcess {
    const onAbort = () => void process.kill();
    signal?.addEventListener('abort', onAbort, { once: true });
    // An abort while the command was starting fired no listener: act on it now.
    if (signal?.aborted) onAbort();
    void process.exited.then(() => {
      signal?.removeEventListener('abort', onAbort);
      stdout.end();
      stderr.end();
    });
    return {
      pid: undefined,
      stdout: stdout.iterate(),
      stderr: stderr.iterate(),
      write: (chunk) => process.write(typeof chunk === 'string' ? encodeUtf8(chunk) : chunk),
      closeStdin: () => process.closeStdin(),
      kill: () => process.kill(),
      exited: process.exited,
      [Symbol.asyncDispose]: async () => {
        await process.kill();
        await process.exited;
      },
    };
  }
}
