import type { ExecResult } from '../contracts/sandbox.js';

const decoder = new TextDecoder('utf-8', { fatal: false });

/** Decodes bytes as UTF-8, turning invalid sequences into U+FFFD. */
export function decodeUtf8(bytes: Uint8Array): string {
  return decoder.decode(bytes);
}

const encoder = new TextEncoder();

/** Encodes a string as UTF-8. */
export function encodeUtf8(text: string): Uint8Array {
  return encoder.encode(text);
}

/** The fields a backend supplies to build an {@link ExecResult}. */
export interface ExecResultInit {
  /** The command's exit code (`-1` when it never ended on its own). */
  exitCode: number;
  /** What it wrote to standard output, as bytes. Default: nothing. */
  stdout?: Uint8Array;
  /** What it wrote to standard error, as bytes. Default: nothing. */
  stderr?: Uint8Array;
  /** True when it was stopped at its time limit. Default: false. */
  timedOut?: boolean;
  /** True when its output was cut at the output limit. Default: false. */
  truncated?: boolean;
  /** The signal that ended it (`SIGKILL`), when one did. */
  signal?: string | undefined;
}

const EMPTY = new Uint8Array(0);

/** Builds an {@link ExecResult}; its text fields are decoded on first access. */
export function createExecResult(init: ExecResultInit): ExecResult {
  const stdout = init.stdout ?? EMPTY;
  const stderr = init.stderr ?? EMPTY;
  let stdoutText: string | undefined;
  let stderrText: string | undefined;
  return {
    exitCode: init.exitCode,
    stdout,
    stderr,
    get stdoutText() {
      stdoutText ??= decodeUtf8(stdout);
      return stdoutText;
    },
    get stderrText() {
      stderrText ??= decodeUtf8(stderr);
      return stderrText;
    },
    timedOut: init.timedOut ?? false,
    truncated: init.truncated ?? false,
    signal: init.signal,
  };
}

/**
 * Keeps the first `limit` bytes of a stream and counts the rest, so a backend can enforce
 * `maxOutputBytes` while it reads rather than after.
 */
export class OutputCollector {
  private readonly chunks: Uint8Array[] = [];
  private kept = 0;
  private dropped = 0;

  /** An empty collector. @param limit The bytes kept; what comes after is counted and dropped. */
  constructor(private readonly limit: number) {}

  /** Adds a chunk; the part past the limit is dropped (and counted). */
  push(chunk: Uint8Array): void {
    const room = this.limit - this.kept;
    if (room <= 0) {
      this.dropped += chunk.byteLength;
      return;
    }
    if (chunk.byteLength <= room) {
      this.chunks.push(chunk);
      this.kept += chunk.byteLength;
      return;
    }
    this.chunks.push(chunk.subarray(0, room));
    this.kept += room;
    this.dropped += chunk.byteLength - room;
  }

  /** True once any byte was dropped. */
  get truncated(): boolean {
    return this.dropped > 0;
  }

  /** Total bytes seen, kept or not. */
  get totalBytes(): number {
    return this.kept + this.dropped;
  }

  /** The kept bytes, as one array. */
  bytes(): Uint8Array {
    if (this.chunks.length === 1) return this.chunks[0]!;
    const out = new Uint8Array(this.kept);
    let offset = 0;
    for (const chunk of this.chunks) {
      out.set(chunk, offset);
      offset += chunk.byteLength;
    }
    return out;
  }
}

/** Turns any accepted stdin value into bytes or an async iterable of bytes. */
export function normalizeInput(
  input: string | Uint8Array | AsyncIterable<Uint8Array>,
): Uint8Array | AsyncIterable<Uint8Array> {
  return typeof input === 'string' ? encodeUtf8(input) : input;
}
