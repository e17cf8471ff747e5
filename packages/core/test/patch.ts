import { expect } from 'vitest';
import { splitLinesKeepEnds } from '../src/internal/tools/text.js';

export /** Applies a unified diff (as unifiedDiff writes it) to `old`, checking every context and removed line. */
function applyPatch(old: string, patch: string): string {
  const source = splitLinesKeepEnds(old);
  const out: string[] = [];
  const lines = patch.split('\n');
  let cursor = 0;
  let index = 2;
  let last: 'old' | 'new' | 'both' | undefined;
  while (index < lines.length) {
    const header = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$/.exec(lines[index]!);
    if (!header) {
      index++;
      continue;
    }
    const oldStart = Number(header[1]);
    const oldLength = header[2] === undefined ? 1 : Number(header[2]);
    const from = oldLength === 0 ? oldStart : oldStart - 1;
    while (cursor < from) out.push(source[cursor++]!);
    index++;
    while (index < lines.length && !lines[index]!.startsWith('@@')) {
      const line = lines[index]!;
      if (line === '\\ No newline at end of file') {
        if (last === 'new' || last === 'both') out[out.length - 1] = out[out.length - 1]!.replace(/\n$/, '');
        index++;
        continue;
      }
      if (line === '' && index === lines.length - 1) break;
      const marker = line[0];
      const text = `${line.slice(1)}\n`;
      if (marker === ' ') {
        expect(source[cursor]?.replace(/\n?$/, '\n')).toBe(text);
        out.push(text);
        cursor++;
        last = 'both';
      } else if (marker === '-') {
        expect(source[cursor]?.replace(/\n?$/, '\n')).toBe(text);
        cursor++;
        last = 'old';
      } else if (marker === '+') {
        out.push(text);
        last = 'new';
      }
      index++;
    }
  }
  while (cursor < source.length) out.push(source[cursor++]!);
  return out.join('');
}
