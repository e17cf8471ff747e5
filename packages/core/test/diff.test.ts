import { describe, expect, it } from 'vitest';
import { unifiedDiff } from '../src/internal/tools/diff.js';
import { applyPatch } from './patch.js';

function random(seed: number) {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    return state / 0x7fffffff;
  };
}

describe('unifiedDiff', () => {
  it('writes difflib-style headers and ranges', () => {
    expect(unifiedDiff('a\nb\nc\n', 'a\nB\nc\n', { fromFile: 'a/f', toFile: 'b/f' })).toBe(
      '--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n',
    );
    expect(unifiedDiff('', 'x\n', { fromFile: '/dev/null', toFile: 'b/f' })).toBe(
      '--- /dev/null\n+++ b/f\n@@ -0,0 +1 @@\n+x\n',
    );
    expect(unifiedDiff('x\n', '', { fromFile: 'a/f', toFile: 'b/f' })).toBe(
      '--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-x\n',
    );
    expect(unifiedDiff('same\n', 'same\n', { fromFile: 'a', toFile: 'b' })).toBe('');
  });

  it('marks a missing final newline', () => {
    expect(unifiedDiff('a\nb', 'a\nb\n', { fromFile: 'a/f', toFile: 'b/f' })).toBe(
      '--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n',
    );
  });

  it('splits distant changes into separate hunks and joins near ones', () => {
    const old = Array.from({ length: 30 }, (_, index) => `line ${index}\n`).join('');
    const changed = old.replace('line 2\n', 'LINE 2\n').replace('line 25\n', 'LINE 25\n');
    const diff = unifiedDiff(old, changed, { fromFile: 'a', toFile: 'b' });
    expect(diff.match(/^@@/gm)).toHaveLength(2);
    const near = old.replace('line 2\n', 'LINE 2\n').replace('line 8\n', 'LINE 8\n');
    expect(unifiedDiff(old, near, { fromFile: 'a', toFile: 'b' }).match(/^@@/gm)).toHaveLength(1);
  });

  it('produces patches that rebuild the new text from the old (random edits)', () => {
    const next = random(42);
    const words = ['alpha', 'beta', 'gamma', 'delta', '', '  indented', 'x'];
    for (let round = 0; round < 300; round++) {
      const oldLines = Array.from(
        { length: Math.floor(next() * 40) },
        () => words[Math.floor(next() * words.length)]!,
      );
      const newLines = [...oldLines];
      const edits = Math.floor(next() * 6);
      for (let edit = 0; edit < edits; edit++) {
        const at = Math.floor(next() * (newLines.length + 1));
        const kind = next();
        if (kind < 0.33) newLines.splice(at, 1);
        else if (kind < 0.66) newLines.splice(at, 0, words[Math.floor(next() * words.length)]!);
        else newLines[at] = `changed ${round}`;
      }
      const oldText = oldLines.join('\n') + (next() < 0.5 ? '\n' : '');
      const newText = newLines.join('\n') + (next() < 0.5 ? '\n' : '');
      const diff = unifiedDiff(oldText, newText, { fromFile: 'a', toFile: 'b' });
      if (oldText === newText) expect(diff).toBe('');
      else expect(applyPatch(oldText, diff), `round ${round}`).toBe(newText);
    }
  });

  it('falls back to one replacement block past the edit-distance limit, still correct', () => {
    const old = Array.from({ length: 3_000 }, (_, index) => `a${index}\n`).join('');
    const changed = Array.from({ length: 3_000 }, (_, index) => `b${index}\n`).join('');
    const diff = unifiedDiff(old, changed, { fromFile: 'a', toFile: 'b' });
    expect(applyPatch(old, diff)).toBe(changed);
  });
});
