import { Duplex } from 'node:stream';
import { GatewayConnectionError } from './client.js';

/**
 * Many byte streams over one text channel: the stdin and stdout of one long-lived process in the
 * sandbox, for a backend whose commands are slow to start or whose output reaches the host only as
 * text. Each frame is one line of ASCII, so a vendor SDK that decodes output as UTF-8 carries it
 * unchanged:
 *
 * - `o <id>`: the opening side starts stream `id`;
 * - `d <id> <base64>`: bytes of stream `id`;
 * - `e <id>`: the sender will write no more on `id` (half-close);
 * - `x <id>`: stream `id` is abandoned (reset);
 * - `a <id> <n>`: the receiver's consumer has taken `n` more bytes of `id`;
 * - `p`: a keep-alive ping, which says the other side is still there.
 *
 * Each line is numbered (`<n> <frame>`, from 1 on each side), so that a transport that may deliver
 * a stretch of lines twice (a reconnected output stream overlapping the one it replaces) does no
 * harm: a line numbered at or below the last one taken is dropped, and a line that skips a number
 * fails the channel (lines were lost).
 *
 * Flow control: each side sends at most `window` bytes of a stream that the other side has not
 * acknowledged, and acknowledges only what its consumer has read, so a slow reader holds its sender
 * back and memory stays bounded by `window` per stream, whatever the producer does.
 */
export interface MuxEndpointOptions {
  /** Writes frames (whole lines) to the other side; resolves once they were accepted. */
  send(text: string): Promise<void>;
  /** Called with each stream the other side opens. Without it, such streams are reset. */
  onOpen?(stream: Duplex): void;
  /** A line that is no frame (output of something else on the channel). */
  onNoise?(line: string): void;
  /** Unacknowledged bytes allowed per stream and direction. Default 4 MiB. */
  window?: number;
  /** Most bytes per data frame. Default 256 KiB. */
  maxFrameBytes?: number;
  /** Sends a ping this often (milliseconds), so the other side can tell it is still wanted. */
  pingMs?: number;
  /**
   * Closes the channel when nothing (not even a ping) came from the other side for this long, in ms:
   * a peer that stalls without closing (its output frozen, a proxy that stopped forwarding) fails the
   * calls in flight instead of holding them for ever. Checked every `pingMs`; set it to a few pings of
   * the other side's.
   */
  silenceMs?: number;
  /** Called once when the channel ends (closed or failed): release what carries it. */
  onClose?(error: Error): void;
}

const DEFAULT_WINDOW = 4 * 1024 * 1024;
const DEFAULT_FRAME_BYTES = 256 * 1024;
// Frames sent together in one write, at most.
const BATCH_CHARS = 1024 * 1024;
// A line longer than this cannot be a frame: the channel is broken.
const MAX_LINE_CHARS = 8 * 1024 * 1024;
const FRAME = /^([odexa]) (\d{1,15})(?: ([A-Za-z0-9+/=]+))?$/;
const NUMBERED = /^(\d{1,15}) (.*)$/;

interface StreamState {
  readonly id: number;
  readonly duplex: Duplex;
  /** Bytes sent and not yet acknowledged. */
  inFlight: number;
  /** Senders waiting for the window to open. */
  waiters: (() => void)[];
  /** Bytes received and not yet acknowledged. */
  unacknowledged: number;
  /** The consumer stopped taking bytes (push returned false): acknowledge when it reads again. */
  held: boolean;
  localEnded: boolean;
  remoteEnded: boolean;
  /** Reset by the other side: nothing to send back. */
  reset: boolean;
  /** Any frame of this stream was handed to `send`, so the other side may have acted on it. */
  sent: boolean;
}

interface Pending {
  text: string;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** One side of a multiplexed text channel (see {@link MuxEndpointOptions}). */
export class MuxEndpoint {
  private readonly streams = new Map<number, StreamState>();
  private readonly window: number;
  private readonly frameBytes: number;
  private nextId = 1;
  private partial = '';
  private queue: Pending[] = [];
  private sending = false;
  private failure: Error | undefined;
  /** The number of the last line sent, and of the last line taken. */
  private sentLines = 0;
  private receivedLines = 0;
  private readonly pinger: NodeJS.Timeout | undefined;
  /** When the last line arrived from the other side (`Date.now()`). */
  lastReceived = Date.now();

  /** Starts reading the other side's lines (and pinging, when asked). */
  constructor(private readonly options: MuxEndpointOptions) {
    this.window = options.window ?? DEFAULT_WINDOW;
    this.frameBytes = options.maxFrameBytes ?? DEFAULT_FRAME_BYTES;
    if (options.pingMs !== undefined) {
      const silenceMs = options.silenceMs;
      this.pinger = setInterval(() => {
        if (silenceMs !== undefined && Date.now() - this.lastReceived > silenceMs) {
          this.close(new Error(`nothing came over the channel for ${silenceMs} ms: the other side stalled`));
          return;
        }
        void this.enqueue('p').catch(() => {});
      }, options.pingMs);
      this.pinger.unref();
    }
  }

  /** True once {@link close} was called or the channel failed. */
  get closed(): boolean {
    return this.failure !== undefined;
  }

  /** Streams open now. */
  get size(): number {
    return this.streams.size;
  }

  /** Opens a stream to the other side. On a closed endpoint the stream fails at once, having sent nothing. */
  open(): Duplex {
    const id = this.nextId++;
    const state = this.createStream(id);
    if (this.failure) {
      const failure = this.failure;
      process.nextTick(() =>
        state.duplex.destroy(new GatewayConnectionError(failure.message, false, failure)),
      );
      return state.duplex;
    }
    state.sent = true;
    this.enqueue(`o ${id}`).catch(() => {});
    return state.duplex;
  }

  /** Takes text from the other side, in pieces of any size. */
  receive(text: string): void {
    if (this.failure) return;
    this.lastReceived = Date.now();
    let data = this.partial + text;
    let newline = data.indexOf('\n');
    while (newline !== -1) {
      this.frame(data.slice(0, newline));
      if (this.failure) return;
      data = data.slice(newline + 1);
      newline = data.indexOf('\n');
    }
    if (data.length > MAX_LINE_CHARS) {
      this.close(new Error('the multiplexed channel sent a line too long to be a frame'));
      return;
    }
    this.partial = data;
  }

  /**
   * Ends the channel: every open stream fails with `error` (as a connection failure that may have
   * reached the other side when the stream had sent anything). Idempotent.
   */
  close(error: Error = new Error('the multiplexed channel closed')): void {
    if (this.failure) return;
    this.failure = error;
    if (this.pinger) clearInterval(this.pinger);
    const queued = this.queue;
    this.queue = [];
    for (const pending of queued) pending.reject(error);
    for (const state of [...this.streams.values()]) {
      state.reset = true;
      this.release(state);
      state.duplex.destroy(new GatewayConnectionError(error.message, state.sent, error));
    }
    this.streams.clear();
    this.options.onClose?.(error);
  }

  private frame(line: string): void {
    const numbered = NUMBERED.exec(line.endsWith('\r') ? line.slice(0, -1) : line);
    if (!numbered) {
      if (line !== '') this.options.onNoise?.(line);
      return;
    }
    const number = Number(numbered[1]);
    if (number <= this.receivedLines) return; // delivered twice
    if (number !== this.receivedLines + 1) {
      this.close(new Error(`the multiplexed channel lost lines ${this.receivedLines + 1} to ${number - 1}`));
      return;
    }
    this.receivedLines = number;
    const trimmed = numbered[2] ?? '';
    if (trimmed === 'p' || trimmed === '') return;
    const match = FRAME.exec(trimmed);
    if (!match) {
      this.options.onNoise?.(trimmed);
      return;
    }
    const [, kind, idText, payload] = match;
    const id = Number(idText);
    if (kind === 'o') {
      if (this.streams.has(id) || !this.options.onOpen) {
        this.enqueue(`x ${id}`).catch(() => {});
        return;
      }
      this.options.onOpen(this.createStream(id).duplex);
      return;
    }
    const state = this.streams.get(id);
    if (!state) return; // a late frame of a stream already gone
    if (kind === 'd' && payload !== undefined) {
      const bytes = Buffer.from(payload, 'base64');
      state.unacknowledged += bytes.length;
      if (!state.duplex.push(bytes)) state.held = true;
      else if (state.unacknowledged >= this.window / 4) this.acknowledge(state);
    } else if (kind === 'a' && payload !== undefined) {
      state.inFlight = Math.max(0, state.inFlight - Number(payload));
      this.release(state);
    } else if (kind === 'e') {
      state.remoteEnded = true;
      state.duplex.push(null);
      this.settle(state);
    } else if (kind === 'x') {
      state.reset = true;
      this.streams.delete(id);
      this.release(state);
      state.duplex.destroy(
        new GatewayConnectionError('the other side reset the connection', true, undefined),
      );
    }
  }

  private createStream(id: number): StreamState {
    const endpoint = this;
    const state: StreamState = {
      id,
      inFlight: 0,
      waiters: [],
      unacknowledged: 0,
      held: false,
      localEnded: false,
      remoteEnded: false,
      reset: false,
      sent: false,
      duplex: new Duplex({
        allowHalfOpen: true,
        write(chunk: Buffer, _encoding, callback) {
          endpoint.sendData(state, chunk).then(() => callback(), callback);
        },
        final(callback) {
          state.localEnded = true;
          endpoint.enqueue(`e ${id}`).then(() => {
            endpoint.settle(state);
            callback();
          }, callback);
        },
        read() {
          if (state.held) {
            state.held = false;
            endpoint.acknowledge(state);
          }
        },
        destroy(error, callback) {
          endpoint.release(state);
          if (endpoint.streams.get(id) === state) {
            endpoint.streams.delete(id);
            // Closed after the other side finished and with no error: a graceful end (as a socket
            // closed after its peer's FIN). Otherwise the other side's writes can no longer land: reset.
            if (!state.reset && !endpoint.failure) {
              const graceful = !error && state.remoteEnded;
              if (!graceful) endpoint.enqueue(`x ${id}`).catch(() => {});
              else if (!state.localEnded) endpoint.enqueue(`e ${id}`).catch(() => {});
            }
          }
          callback(error);
        },
      }),
    };
    this.streams.set(id, state);
    return state;
  }

  private async sendData(state: StreamState, chunk: Buffer): Promise<void> {
    for (let offset = 0; offset < chunk.length; offset += this.frameBytes) {
      while (state.inFlight >= this.window) {
        await new Promise<void>((resolve) => state.waiters.push(resolve));
        if (state.duplex.destroyed || this.failure) throw this.failure ?? new Error('the stream is closed');
      }
      const piece = chunk.subarray(offset, offset + this.frameBytes);
      state.inFlight += piece.length;
      state.sent = true;
      await this.enqueue(`d ${state.id} ${piece.toString('base64')}`);
    }
  }

  private acknowledge(state: StreamState): void {
    if (state.unacknowledged === 0 || state.remoteEnded) return;
    const count = state.unacknowledged;
    state.unacknowledged = 0;
    this.enqueue(`a ${state.id} ${count}`).catch(() => {});
  }

  private release(state: StreamState): void {
    const waiters = state.waiters;
    state.waiters = [];
    for (const wake of waiters) wake();
  }

  /** A stream both sides have ended is forgotten (its duplex ends by itself). */
  private settle(state: StreamState): void {
    if (state.localEnded && state.remoteEnded && this.streams.get(state.id) === state)
      this.streams.delete(state.id);
  }

  /** Queues one frame; frames queued while a write is in flight go together in the next one, in order. */
  private enqueue(line: string): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<void>((resolve, reject) => {
      this.sentLines += 1;
      this.queue.push({ text: `${this.sentLines} ${line}\n`, resolve, reject });
      if (!this.sending) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.sending = true;
    try {
      while (this.queue.length > 0 && !this.failure) {
        const batch: Pending[] = [];
        let size = 0;
        while (
          this.queue.length > 0 &&
          (batch.length === 0 || size + this.queue[0]!.text.length <= BATCH_CHARS)
        ) {
          const next = this.queue.shift()!;
          batch.push(next);
          size += next.text.length;
        }
        try {
          await this.options.send(batch.map((pending) => pending.text).join(''));
          for (const pending of batch) pending.resolve();
        } catch (error) {
          const failure = error instanceof Error ? error : new Error(String(error));
          for (const pending of batch) pending.reject(failure);
          this.close(failure);
        }
      }
    } finally {
      this.sending = false;
    }
  }
}
