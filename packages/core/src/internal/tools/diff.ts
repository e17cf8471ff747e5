import { splitLinesKeepEnds } from './text.js';

/** A changed region: old lines [oldStart, oldEnd) became new lines [newStart, newEnd) (0-based). */
export interface ChangeBlock {
  oldStart: number;
  oldEnd: number;
  newStart: number;
  newEnd: number;
}

/** Options of {@link unifiedDiff}. */
export interface DiffOptions {
  fromFile: string;
  toFile: string;
  /** Lines of context around each change. Default 3. */
  context?: number;
  /** Change blocks, when the caller already knows them (Edit does); otherwise they are computed. */
  blocks?: ChangeBlock[];
}

// Myers' algorithm is O((N+M)·D); past this many differences the middle is shown as one replacement.
const MAX_EDIT_DISTANCE = 2_000;

/**
 * A unified diff of two texts, in the format of Python's `difflib.unified_diff` (headers, `@@` ranges)
 * with git's `\ No newline at end of file` marker. Empty when the texts are equal.
 */
export function unifiedDiff(oldText: string, newText: string, options: DiffOptions): string {
  if (oldText === newText) return '';
  const oldLines = splitLinesKeepEnds(oldText);
  const newLines = splitLinesKeepEnds(newText);
  const blocks = options.blocks ?? diffLines(oldLines, newLines);
  if (blocks.length === 0) return '';
  return formatHunks(oldLines, newLines, blocks, options);
}

/** The change blocks between two line arrays: common prefix and suffix trimmed, Myers in between. */
export function diffLines(oldLines: readonly string[], newLines: readonly string[]): ChangeBlock[] {
  let prefix = 0;
  const shorter = Math.min(oldLines.length, newLines.length);
  while (prefix < shorter && oldLines[prefix] === newLines[prefix]) prefix++;
  let suffix = 0;
  while (
    suffix < shorter - prefix &&
    oldLines[oldLines.length - 1 - suffix] === newLines[newLines.length - 1 - suffix]
  ) {
    suffix++;
  }
  const oldEnd = oldLines.length - suffix;
  const newEnd = newLines.length - suffix;
  if (prefix === oldEnd && prefix === newEnd) return [];
  const middle = myers(oldLines, prefix, oldEnd, newLines, prefix, newEnd);
  return middle ?? [{ oldStart: prefix, oldEnd, newStart: prefix, newEnd }];
}

function myers(
  a: readonly string[],
  aStart: number,
  aEnd: number,
  b: readonly string[],
  bStart: number,
  bEnd: number,
): ChangeBlock[] | undefined {
  const n = aEnd - aStart;
  const m = bEnd - bStart;
  const max = Math.min(n + m, MAX_EDIT_DISTANCE);
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  let found = -1;
  for (let d = 0; d <= max && found < 0; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x: number;
      if (k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!)) x = v[offset + k + 1]!;
      else x = v[offset + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[aStart + x] === b[bStart + y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
  }
  if (found < 0) return undefined;
  // Walk back through the trace, collecting the edit script as (x, y) steps.
  type Step = { kind: 'keep' | 'delete' | 'insert'; x: number; y: number };
  const steps: Step[] = [];
  let x = n;
  let y = m;
  for (let d = found; d > 0; d--) {
    const previous = trace[d]!;
    const k = x - y;
    const down = k === -d || (k !== d && previous[offset + k - 1]! < previous[offset + k + 1]!);
    const prevK = down ? k + 1 : k - 1;
    const prevX = previous[offset + prevK]!;
    const prevY = prevX - prevK;
    while (x > prevX + (down ? 0 : 1) && y > prevY + (down ? 1 : 0)) {
      steps.push({ kind: 'keep', x: x - 1, y: y - 1 });
      x--;
      y--;
    }
    if (down) steps.push({ kind: 'insert', x, y: y - 1 });
    else steps.push({ kind: 'delete', x: x - 1, y });
    x = prevX;
    y = prevY;
  }
  steps.reverse();
  const blocks: ChangeBlock[] = [];
  let current: ChangeBlock | undefined;
  for (const step of steps) {
    if (step.kind === 'keep') {
      current = undefined;
      continue;
    }
    if (!current) {
      current = {
        oldStart: aStart + step.x,
        oldEnd: aStart + step.x,
        newStart: bStart + step.y,
        newEnd: bStart + step.y,
      };
      blocks.push(current);
    }
    if (step.kind === 'delete') current.oldEnd = aStart + step.x + 1;
    else current.newEnd = bStart + step.y + 1;
  }
  return blocks;
}

function formatRange(start: number, length: number): string {
  // difflib: 1-based start; a one-line range shows only its start; an empty one starts before it.
  if (length === 1) return `${start + 1}`;
  if (length === 0) return `${start},0`;
  return `${start + 1},${length}`;
}

function pushLine(out: string[], marker: string, line: string): void {
  if (line.endsWith('\n')) {
    out.push(marker, line);
  } else {
    out.push(marker, line, '\n\\ No newline at end of file\n');
  }
}

function formatHunks(
  oldLines: readonly string[],
  newLines: readonly string[],
  blocks: ChangeBlock[],
  options: DiffOptions,
): string {
  const context = options.context ?? 3;
  const out: string[] = [`--- ${options.fromFile}\n`, `+++ ${options.toFile}\n`];
  let index = 0;
  while (index < blocks.length) {
    // Group blocks whose context windows touch into one hunk.
    let last = index;
    while (last + 1 < blocks.length && blocks[last + 1]!.oldStart - blocks[last]!.oldEnd <= 2 * context)
      last++;
    const first = blocks[index]!;
    const final = blocks[last]!;
    const oldFrom = Math.max(0, first.oldStart - context);
    const newFrom = Math.max(0, first.newStart - (first.oldStart - oldFrom));
    const oldTo = Math.min(oldLines.length, final.oldEnd + context);
    const newTo = Math.min(newLines.length, final.newEnd + (oldTo - final.oldEnd));
    out.push(`@@ -${formatRange(oldFrom, oldTo - oldFrom)} +${formatRange(newFrom, newTo - newFrom)} @@\n`);
    let cursor = oldFrom;
    for (let blockIndex = index; blockIndex <= last; blockIndex++) {
      const block = blocks[blockIndex]!;
      for (; cursor < block.oldStart; cursor++) pushLine(out, ' ', oldLines[cursor]!);
      for (let line = block.oldStart; line < block.oldEnd; line++) pushLine(out, '-', oldLines[line]!);
      for (let line = block.newStart; line < block.newEnd; line++) pushLine(out, '+', newLines[line]!);
      cursor = block.oldEnd;
    }
    for (; cursor < oldTo; cursor++) pushLine(out, ' ', oldLines[cursor]!);
    index = last + 1;
  }
  return out.join('');
}
