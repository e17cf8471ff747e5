import { describe, expect, it } from 'vitest';
import { globToRegExp } from '../src/index.js';

const matches = (glob: string, path: string) => globToRegExp(glob).test(path);

describe('globToRegExp', () => {
  it.each([
    ['*.ts', 'a.ts', true],
    ['*.ts', 'src/a.ts', false],
    ['**/*.ts', 'a.ts', true],
    ['**/*.ts', 'src/deep/a.ts', true],
    ['src/**/*.ts', 'src/a.ts', true],
    ['src/**/*.ts', 'src/x/y/a.ts', true],
    ['src/**/*.ts', 'lib/a.ts', false],
    ['src/**', 'src/x/y', true],
    ['?.md', 'a.md', true],
    ['?.md', 'ab.md', false],
    ['?.md', '/.md', false],
    ['file[0-9].txt', 'file7.txt', true],
    ['file[0-9].txt', 'fileA.txt', false],
    ['file[!0-9].txt', 'fileA.txt', true],
    ['file[!0-9].txt', 'file/.txt', false],
    ['*.{ts,tsx}', 'a.tsx', true],
    ['*.{ts,tsx}', 'a.js', false],
    ['{src,lib}/**/*.{ts,js}', 'lib/x/a.js', true],
    ['a{b,{c,d}e}f', 'adef', true],
    ['a{b,{c,d}e}f', 'abf', true],
    ['a{b,{c,d}e}f', 'aef', false],
    ['\\*.txt', '*.txt', true],
    ['\\*.txt', 'a.txt', false],
    ['*', '.hidden', true],
    ['a+b(c).txt', 'a+b(c).txt', true],
    ['名前/*.md', '名前/読む.md', true],
    ['🙂?', '🙂x', true],
  ])('%s vs %s → %s', (glob, path, expected) => {
    expect(matches(glob, path)).toBe(expected);
  });

  it('refuses unbalanced brackets and braces', () => {
    expect(() => globToRegExp('a[b')).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => globToRegExp('a{b,c')).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
