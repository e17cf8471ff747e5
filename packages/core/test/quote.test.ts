import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { shellJoin, shellQuote } from '../src/backend.js';

const awkward = [
  'plain',
  'with space',
  "it's",
  '"double"',
  '$HOME',
  '`id`',
  '$(id)',
  '*',
  '\\',
  'new\nline',
  '',
  '-n',
  "'''",
  'ünï 名 🙂',
  '!bang',
  '~tilde',
  'a;b|c&d',
];

describe('shellQuote', () => {
  it('leaves safe words alone and quotes the rest', () => {
    expect(shellQuote('abc-1.2/x')).toBe('abc-1.2/x');
    expect(shellQuote('')).toBe("''");
    expect(shellQuote("it's")).toBe(`'it'\\''s'`);
  });

  it('round-trips every awkward argument through a real sh', () => {
    const script = `printf '%s\\0' ${shellJoin(awkward)}`;
    const result = spawnSync('sh', ['-c', script], { encoding: 'utf8' });
    expect(result.status).toBe(0);
    expect(result.stdout.split('\0').slice(0, -1)).toEqual(awkward);
  });

  it('refuses NUL', () => {
    expect(() => shellQuote('a\0b')).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
