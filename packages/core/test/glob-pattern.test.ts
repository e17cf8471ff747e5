import { describe, expect, it } from 'vitest';
import {
  compileGlob,
  GLOB_MAX_ALTERNATIVES,
  GLOB_MAX_BRACE_DEPTH,
  GLOB_MAX_PATTERN_LENGTH,
} from '../src/internal/tools/glob-pattern.js';

const matches = (glob: string, path: string) => compileGlob(glob).test(path);
const invalidArgument = (message: RegExp) =>
  expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(message) });

describe('compileGlob', () => {
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
    ['{src,lib}/**/*.ts', 'lib/x/a.ts', true],
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
    // Further cases, each checked against the former RegExp translation.
    ['?', '🙂', true],
    ['??', '🙂', false],
    ['[🙂-🙃]', '🙃', true],
    ['**', 'a/b/c', true],
    ['**', '', true],
    ['**/', 'a/b/', true],
    ['**/', 'a/b', false],
    ['a/**/b', 'a/b', true],
    ['a/**/b', 'a/x/y/b', true],
    ['a/**/b', 'ab', false],
    ['a**/b', 'ax/b', true],
    ['a**/b', 'a/x/b', false],
    ['a/**b', 'a/xb', true],
    ['a/**b', 'a/x/b', false],
    ['{**/x,y}', 'a/x', true],
    ['{**/x,y}', 'ax', false],
    ['{**/x,y}', '/x', true],
    ['*{}a', 'ba', true],
    ['{,a}b', 'b', true],
    ['[]a]', ']', true],
    ['[!]a]', 'b', true],
    ['[!]a]', ']', false],
    ['[\\]]', '\\]', true],
    ['[^x]', 'y', true],
    ['[a-]', '-', true],
    ['[/]', '/', false],
    ['a\\', 'a\\', true],
    ['a,b}', 'a,b}', true],
    ['a\\{b', 'a{b', true],
  ])('%s vs %s → %s', (glob, path, expected) => {
    expect(matches(glob, path)).toBe(expected);
  });

  it('refuses unbalanced brackets and braces', () => {
    expect(() => compileGlob('a[b')).toThrow(invalidArgument(/Unclosed \[/));
    expect(() => compileGlob('a{b,c')).toThrow(invalidArgument(/Unclosed \{/));
    expect(() => compileGlob('[]')).toThrow(invalidArgument(/Unclosed \[/));
    expect(() => compileGlob('{a[},b}')).toThrow(invalidArgument(/Unclosed \[/));
  });

  it('lets a final ** match any character, a line break too (the RegExp `.` did not)', () => {
    expect(matches('src/**', 'src/a\nb/c')).toBe(true);
    expect(matches('src/*', 'src/a\nb')).toBe(true);
  });

  it('refuses a class range out of order', () => {
    expect(() => compileGlob('[z-a]')).toThrow(invalidArgument(/Range out of order/));
  });

  it('needs no backtracking: *a repeated then *b against runs of a', () => {
    const matcher = compileGlob(`${'*a'.repeat(14)}*b`);
    const short = 'a'.repeat(30);
    const long = 'a'.repeat(10_000);
    // A backtracking matcher takes seconds for one of these; this one takes microseconds.
    let found = 0;
    for (let round = 0; round < 1_000; round++) if (matcher.test(short)) found++;
    for (let round = 0; round < 20; round++) if (matcher.test(long)) found++;
    expect(found).toBe(0);
    expect(matcher.test(`${short}b`)).toBe(true);
    expect(matcher.test(`${long}b`)).toBe(true);
  });

  it('stays right once its DFA cache is full', () => {
    // "The 13th character from the end is an a" needs 2^13 DFA states, far more than are cached.
    const matcher = compileGlob(`*a${'?'.repeat(12)}`);
    const random = seeded(0xdfa);
    for (let round = 0; round < 3_000; round++) {
      const path = Array.from({ length: random(40) }, () => (random(2) === 0 ? 'a' : 'b')).join('');
      if (matcher.test(path) !== (path.length >= 13 && path[path.length - 13] === 'a'))
        throw new Error(`wrong answer for ${path}`);
    }
    expect(matcher.test(`a${'🙂'.repeat(12)}`)).toBe(true);
    expect(matcher.test(`a${'🙂'.repeat(11)}/`)).toBe(false);
  });

  it('enforces its limits with INVALID_ARGUMENT, not a stack overflow', () => {
    expect(GLOB_MAX_PATTERN_LENGTH).toBe(4_096);
    expect(GLOB_MAX_BRACE_DEPTH).toBe(32);
    expect(GLOB_MAX_ALTERNATIVES).toBe(1_024);
    // 5 000 `{` are over the length limit; 4 000 are within it and over the nesting limit.
    expect(() => compileGlob('{'.repeat(5_000))).toThrow(invalidArgument(/too long/));
    expect(() => compileGlob('{'.repeat(4_000))).toThrow(invalidArgument(/nest too deeply/));
    expect(() => compileGlob('a'.repeat(100_000))).toThrow(invalidArgument(/too long/));
    expect(compileGlob('a'.repeat(4_096)).test('a'.repeat(4_096))).toBe(true);
    expect(() => compileGlob('a'.repeat(4_097))).toThrow(invalidArgument(/too long/));

    const nested = (depth: number) => `${'{x,'.repeat(depth)}a${'}'.repeat(depth)}`;
    expect(() => compileGlob(nested(33))).toThrow(invalidArgument(/nest too deeply/));
    expect(compileGlob(nested(32)).test('a')).toBe(true);
    expect(compileGlob(nested(32)).test('x')).toBe(true);
    expect(compileGlob(nested(32)).test('b')).toBe(false);

    // Two-character names: `{aa,ab,…}` with 1 024 of them is about 3 000 characters.
    const digits = 'abcdefghijklmnopqrstuvwxyz012345';
    const names = Array.from({ length: 1_024 }, (_, index) => digits[index >> 5]! + digits[index & 31]!);
    const allowed = compileGlob(`{${names.join(',')}}`);
    expect(allowed.test('55')).toBe(true);
    expect(allowed.test('a6')).toBe(false);
    expect(() => compileGlob(`{${names.join(',')},z}`)).toThrow(invalidArgument(/too many/));
    expect(() => compileGlob(`{${','.repeat(1_024)}}`)).toThrow(invalidArgument(/too many/));
    expect(compileGlob(`{${','.repeat(1_023)}}`).test('')).toBe(true);
    // Every brace counts its alternatives toward the one total.
    expect(() => compileGlob('{a,b}'.repeat(513))).toThrow(invalidArgument(/too many/));
    expect(compileGlob('{a,b}'.repeat(512)).test('ab'.repeat(256))).toBe(true);
  });

  it('agrees with a backtracking reference matcher on generated globs', () => {
    const random = seeded(0x5eed);
    let checked = 0;
    let matched = 0;
    for (let round = 0; round < 400; round++) {
      const glob = randomGlob(random);
      const matcher = compileGlob(glob);
      const tokens = parseReference(glob);
      for (let sample = 0; sample < 50; sample++) {
        // Half the paths are built to fit the glob (then maybe altered), half are random.
        const path = sample % 2 === 0 ? randomPath(random) : samplePath(tokens, random);
        const expected = referenceMatch(tokens, path);
        if (matcher.test(path) !== expected)
          throw new Error(`${JSON.stringify(glob)} vs ${JSON.stringify(path)}: expected ${expected}`);
        checked++;
        if (expected) matched++;
      }
    }
    expect(checked).toBe(20_000);
    // Enough of both answers for the comparison to mean something.
    expect(matched).toBeGreaterThan(checked / 5);
    expect(matched).toBeLessThan(checked * 0.8);
  });

  it('agrees with the reference on globs too big for precomputed ε-closures', () => {
    // 700 nullable `*` loops in a row have ~250 000 closure entries, past the precomputation budget, so
    // ε-moves are followed while matching. `*{}` repeated means the same as `*{}` once.
    const random = seeded(0xb16);
    const prefix = '*{}'.repeat(700);
    for (let round = 0; round < 40; round++) {
      const glob = randomGlob(random);
      const matcher = compileGlob(prefix + glob);
      const tokens = parseReference(`*{}${glob}`);
      for (let sample = 0; sample < 25; sample++) {
        const path = sample % 2 === 0 ? randomPath(random) : samplePath(tokens, random);
        const expected = referenceMatch(tokens, path);
        if (matcher.test(path) !== expected)
          throw new Error(`${JSON.stringify(glob)} vs ${JSON.stringify(path)}: expected ${expected}`);
      }
    }
  });
});

// A deterministic PRNG (mulberry32), so the generated cases are the same on every run.
function seeded(seed: number): (below: number) => number {
  let state = seed >>> 0;
  return (below) => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return Math.floor((((value ^ (value >>> 14)) >>> 0) / 4_294_967_296) * below);
  };
}

const ATOMS = [
  'a',
  'b',
  'a',
  'b',
  '/',
  '/',
  '.',
  '*',
  '*',
  '?',
  '**',
  '**',
  '[ab]',
  '[!a]',
  '[^/]',
  '[a-c]',
  '[]a]',
  '[a-]',
  '[a🙂]',
  '🙂',
  '\\*',
  '\\\\',
  ',',
  '}',
];

/** A valid glob: atoms and brace groups (every `{` is closed; a stray `}` or `,` only ends one sooner). */
function randomGlob(random: (below: number) => number): string {
  const sequence = (depth: number, maxAtoms: number): string => {
    let text = '';
    const atoms = random(maxAtoms + 1);
    for (let count = 0; count < atoms; count++) {
      if (depth < 2 && random(6) === 0) {
        const alternatives = 1 + random(3);
        const parts: string[] = [];
        for (let part = 0; part < alternatives; part++) parts.push(sequence(depth + 1, 3));
        text += `{${parts.join(',')}}`;
      } else {
        text += ATOMS[random(ATOMS.length)];
      }
    }
    return text;
  };
  let glob = sequence(0, 6);
  // A lone `\` at the very end is a literal backslash.
  if (random(12) === 0) glob += '\\';
  return glob;
}

const PATH_CHARS = ['a', 'b', 'a', 'b', 'c', '/', '/', '.', '*', '\\', ']', ',', '}', '-', '🙂'];

function randomPath(random: (below: number) => number): string {
  let path = '';
  const length = random(9);
  for (let index = 0; index < length; index++) path += PATH_CHARS[random(PATH_CHARS.length)];
  return path;
}

type Token =
  | { kind: 'char'; char: string }
  | { kind: 'one' }
  | { kind: 'star' }
  | { kind: 'segments' }
  | { kind: 'anything' }
  | { kind: 'class'; regex: RegExp }
  | { kind: 'braces'; alternatives: Token[][] };

/** The reference parse: recursive, like the former RegExp translation. Only for small, valid globs. */
function parseReference(glob: string): Token[] {
  const chars = Array.from(glob);
  const parse = (start: number, insideBraces: boolean): { tokens: Token[]; end: number } => {
    const tokens: Token[] = [];
    let index = start;
    while (index < chars.length) {
      const char = chars[index]!;
      if (insideBraces && (char === ',' || char === '}')) return { tokens, end: index };
      if (char === '*') {
        const atSegmentStart = index === 0 || chars[index - 1] === '/';
        if (atSegmentStart && chars[index + 1] === '*' && chars[index + 2] === '/') {
          tokens.push({ kind: 'segments' });
          index += 3;
        } else if (atSegmentStart && chars[index + 1] === '*' && index + 2 === chars.length) {
          tokens.push({ kind: 'anything' });
          index += 2;
        } else {
          tokens.push({ kind: 'star' });
          index++;
        }
      } else if (char === '?') {
        tokens.push({ kind: 'one' });
        index++;
      } else if (char === '\\') {
        tokens.push({ kind: 'char', char: chars[index + 1] ?? '\\' });
        index += 2;
      } else if (char === '[') {
        let close = index + 1;
        if (chars[close] === '!' || chars[close] === '^') close++;
        if (chars[close] === ']') close++;
        while (chars[close] !== ']') close++;
        let body = chars.slice(index + 1, close).join('');
        const negate = body.startsWith('!') || body.startsWith('^');
        if (negate) body = body.slice(1);
        const escaped = body.replace(/[\\\]^]/g, (special) => `\\${special}`);
        tokens.push({ kind: 'class', regex: new RegExp(`^[${negate ? '^' : ''}${escaped}]$`, 'u') });
        index = close + 1;
      } else if (char === '{') {
        const alternatives: Token[][] = [];
        let closed = false;
        index++;
        while (!closed) {
          const part = parse(index, true);
          alternatives.push(part.tokens);
          closed = chars[part.end] === '}';
          index = part.end + 1;
        }
        tokens.push({ kind: 'braces', alternatives });
      } else {
        tokens.push({ kind: 'char', char });
        index++;
      }
    }
    return { tokens, end: index };
  };
  return parse(0, false).tokens;
}

/** The reference match: backtracking over code points. Only for small inputs. */
function referenceMatch(tokens: Token[], path: string): boolean {
  const input = Array.from(path);
  const matchFrom = (
    sequence: Token[],
    at: number,
    position: number,
    rest: (position: number) => boolean,
  ): boolean => {
    if (at === sequence.length) return rest(position);
    const token = sequence[at]!;
    const next = (after: number): boolean => matchFrom(sequence, at + 1, after, rest);
    const current = input[position];
    switch (token.kind) {
      case 'char':
        return current === token.char && next(position + 1);
      case 'one':
        return current !== undefined && current !== '/' && next(position + 1);
      case 'class':
        return current !== undefined && current !== '/' && token.regex.test(current) && next(position + 1);
      case 'star':
        for (let end = position; ; end++) {
          if (next(end)) return true;
          if (end >= input.length || input[end] === '/') return false;
        }
      case 'segments':
        if (next(position)) return true;
        for (let end = position; end < input.length; end++)
          if (input[end] === '/' && next(end + 1)) return true;
        return false;
      case 'anything':
        for (let end = position; end <= input.length; end++) if (next(end)) return true;
        return false;
      case 'braces':
        return token.alternatives.some((alternative) => matchFrom(alternative, 0, position, next));
    }
  };
  return matchFrom(tokens, 0, 0, (position) => position === input.length);
}

/** A path built to fit the glob, with one character sometimes changed, dropped or added. */
function samplePath(tokens: Token[], random: (below: number) => number): string {
  const pick = (choices: readonly string[]) => choices[random(choices.length)]!;
  const name = () => Array.from({ length: random(3) }, () => pick(['a', 'b', '.', '🙂'])).join('');
  const build = (sequence: Token[]): string =>
    sequence
      .map((token) => {
        switch (token.kind) {
          case 'char':
            return token.char;
          case 'one':
            return pick(['a', 'b', '🙂', '*']);
          case 'star':
            return name();
          case 'segments':
            return Array.from({ length: random(3) }, () => `${name()}/`).join('');
          case 'anything':
            return Array.from({ length: random(3) }, name).join('/');
          case 'class':
            return pick(PATH_CHARS.filter((char) => char !== '/' && token.regex.test(char)).concat('a'));
          default: // braces
            return build(token.alternatives[random(token.alternatives.length)]!);
        }
      })
      .join('');
  const chars = Array.from(build(tokens));
  const at = random(chars.length + 1);
  switch (random(4)) {
    case 0:
      chars.splice(at, 1);
      break;
    case 1:
      chars.splice(at, 0, pick(PATH_CHARS));
      break;
    case 2:
      chars.splice(at, 1, pick(PATH_CHARS));
      break;
  }
  return chars.join('');
}
