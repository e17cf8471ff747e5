import type { ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import type { ExecInput, OutputListener } from '../contracts/sandbox.js';
import { normalizeInput, OutputCollector } from './exec-result.js';

// After the direct child exits, its pipes may still be held open by a background grandchild (`cmd &`).
// The result waits while output keeps coming, and stops waiting after this long without any.
const PIPE_IDLE_AFTER_EXIT_MS = 200;

/**
 * Writes `input` to the child's stdin (all at once, or chunk by chunk as the pipe drains) and closes
 * it; with no input, closes it at once. A process that exits without reading all of it is not an error.
 */
export async function pumpInput(child: ChildProcess, input: ExecInput | undefined): Promise<void> {
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

/** What {@link readStream} keeps of one output stream while it is read. */
export interface StreamReader {
  /** The output kept, up to the limit. */
  collector: OutputCollector;
  /** `Date.now()` of the last chunk, or of the listener's last resume. */
  lastActivity: number;
  /** True while the stream waits for a listener's promise. */
  paused: boolean;
  /** True once the stream ended, closed or failed (or there was none). */
  ended: boolean;
}

/**
 * Reads a child's output stream into a collector capped at `limit` bytes, passing each chunk to
 * `listener`; a listener's promise pauses the stream until it settles. A listener's error goes to
 * `onListenerError`.
 */
export function readStream(
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
 * Waits for the output pipes to close after the process exited. They normally close at once; when a
 * background grandchild still holds them, the wait ends once no output came for a while.
 */
export async function drainAfterExit(child: ChildProcess, readers: StreamReader[]): Promise<void> {
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
