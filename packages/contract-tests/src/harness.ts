import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { isWsError, type Sandbox, type WsErrorCode } from '@ws/core';
import { expect } from 'vitest';
import { type CaseControls, type CaseOptions, declareCase } from './suite.js';
import type { AreaContext } from './target.js';

/**
 * Registers one conformance case. The id is stable across releases and backends, so a failure on one
 * backend can be compared with the same case on another; it leads the test title in brackets. The
 * last argument is the case's time limit, or its options (time limit, what decides its outcome and
 * the routes it takes, when not what its section says).
 */
export function conformanceCase(
  context: AreaContext,
  id: string,
  title: string,
  body: (test: CaseControls) => Promise<void>,
  options?: number | CaseOptions,
): void {
  const { timeoutMs, ...rest } = typeof options === 'number' ? { timeoutMs: options } : (options ?? {});
  declareCase(id, title, body, timeoutMs ?? context.caseTimeoutMs, rest);
}

export type { CaseControls, CaseOptions };

/** Asserts that `action` rejects (or throws) a WsError with `code`; returns the error. */
export async function expectWsError(action: () => unknown, code: WsErrorCode): Promise<Error> {
  let caught: unknown;
  try {
    await action();
  } catch (error) {
    caught = error;
  }
  expect(caught, `expected a WsError ${code}, but nothing was thrown`).toBeDefined();
  if (!isWsError(caught))
    throw new Error(`expected a WsError ${code}, got ${String(caught)}`, { cause: caught });
  expect(caught.code, caught.message).toBe(code);
  return caught;
}

let collectGarbage: (() => void) | undefined;

/**
 * The bytes this process keeps alive (JavaScript heap and buffers) right after a full garbage
 * collection: what an implementation holds, without the garbage a stream leaves for the collector
 * (which the resident set counts, and which varies by tens of MB with the collector's timing).
 */
export function liveBytes(): number {
  if (!collectGarbage) {
    setFlagsFromString('--expose-gc');
    collectGarbage = runInNewContext('gc') as () => void;
  }
  collectGarbage();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.external;
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Bytes 0..255 once each. */
export function allByteValues(): Uint8Array {
  return Uint8Array.from({ length: 256 }, (_, index) => index);
}

/** A deterministic pseudo-random buffer (xorshift), so a large-file case needs no crypto and repeats exactly. */
export function patternBytes(size: number, seed = 0x9e3779b9): Uint8Array {
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  let state = seed >>> 0;
  let offset = 0;
  for (; offset + 4 <= size; offset += 4) {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    view.setUint32(offset, state);
  }
  for (; offset < size; offset++) out[offset] = offset & 0xff;
  return out;
}

/** True when two byte arrays are equal (fast, without a per-byte diff on failure). */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(
    Buffer.from(b.buffer, b.byteOffset, b.byteLength),
  );
}

/** File names that break naive shell code: spaces, quotes, newlines, unicode, leading dashes, globs. */
export const HOSTILE_NAMES: readonly string[] = [
  'with space.txt',
  "single'quote.txt",
  'double"quote.txt',
  'new\nline.txt',
  'tab\there.txt',
  'ünïcødé-名前-🙂.txt',
  '-rf',
  '--help',
  '$HOME.txt',
  '*.txt',
  'back\\slash.txt',
  '`backtick`.txt',
  'semi;colon&amp|pipe.txt',
  ' leading-space.txt',
];

/** Ids that must be refused wherever an id becomes a path segment. */
export const HOSTILE_IDS: readonly string[] = [
  '../x',
  'a/b',
  '.seed',
  '',
  'nul\0byte',
  '..',
  'back\\slash',
  'new\nline',
];

/**
 * Plants what a hostile agent plants at `path`: a FIFO with `cat /dev/zero` waiting to fill whoever
 * opens it (started with none of the command's output streams, so the command ends at once); runs
 * `body`, then ends a writer still waiting for a reader (opened and closed at once, read-write, which
 * does not block) and removes the FIFO.
 */
export async function withEndlessFifo(
  sandbox: Pick<Sandbox, 'exec'>,
  path: string,
  body: () => Promise<void>,
): Promise<void> {
  const planted = await sandbox.exec(
    [
      'sh',
      '-c',
      `mkfifo "$1" && { sh -c 'exec cat /dev/zero > "$1"' sh "$1" </dev/null >/dev/null 2>&1 & } && echo planted`,
      'sh',
      path,
    ],
    { timeoutMs: 10_000 },
  );
  expect(planted.stdoutText.trim(), planted.stderrText).toBe('planted');
  try {
    await body();
  } finally {
    await sandbox.exec(['sh', '-c', 'exec 3<>"$1"; exec 3<&-; rm -f "$1"', 'sh', path], {
      timeoutMs: 10_000,
    });
  }
}
