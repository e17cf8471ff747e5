import { WsError } from '../errors.js';

const REGEX_SPECIAL = /[\\^$.*+?()[\]{}|]/;

/**
 * Compiles a glob (relative, `/`-separated) into an anchored regular expression over relative paths.
 * `*` and `?` stay within one path segment, `**` as a whole segment spans any number of segments
 * (zero included), `[abc]`, `[a-z]` and `[!x]` are character classes, `{a,b}` are alternatives
 * (nestable) and `\` escapes the next character. Dotfiles are matched like any other name.
 *
 * @throws WsError `INVALID_ARGUMENT` for an unbalanced `[` or `{`.
 */
export function globToRegExp(pattern: string): RegExp {
  return new RegExp(`^${translate(pattern, 0, false).source}$`, 'u');
}

interface Translated {
  source: string;
  end: number;
}

function translate(pattern: string, start: number, insideBraces: boolean): Translated & { source: string } {
  let source = '';
  let index = start;
  while (index < pattern.length) {
    const char = pattern[index]!;
    if (insideBraces && (char === ',' || char === '}')) return { source, end: index };
    if (char === '*') {
      if (pattern[index + 1] === '*') {
        const atSegmentStart = index === 0 || pattern[index - 1] === '/';
        const next = pattern[index + 2];
        if (atSegmentStart && next === '/') {
          source += '(?:[^/]*/)*';
          index += 3;
          continue;
        }
        if (atSegmentStart && next === undefined) {
          source += '.*';
          index += 2;
          continue;
        }
      }
      source += '[^/]*';
      index++;
      continue;
    }
    if (char === '?') {
      source += '[^/]';
      index++;
      continue;
    }
    if (char === '\\') {
      const next = pattern[index + 1];
      if (next === undefined) {
        source += '\\\\';
        index++;
      } else {
        source += escapeChar(next);
        index += 2;
      }
      continue;
    }
    if (char === '[') {
      const close = findClassEnd(pattern, index);
      if (close === -1)
        throw new WsError('INVALID_ARGUMENT', `Unclosed [ in glob ${JSON.stringify(pattern)}`);
      let body = pattern.slice(index + 1, close);
      let negate = false;
      if (body.startsWith('!') || body.startsWith('^')) {
        negate = true;
        body = body.slice(1);
      }
      const escaped = body.replace(/[\\\]^]/g, (match) => `\\${match}`);
      source += negate ? `(?![/])[^${escaped}]` : `(?![/])[${escaped}]`;
      index = close + 1;
      continue;
    }
    if (char === '{') {
      const alternatives: string[] = [];
      let cursor = index + 1;
      for (;;) {
        const part = translate(pattern, cursor, true);
        alternatives.push(part.source);
        if (part.end >= pattern.length)
          throw new WsError('INVALID_ARGUMENT', `Unclosed { in glob ${JSON.stringify(pattern)}`);
        if (pattern[part.end] === '}') {
          index = part.end + 1;
          break;
        }
        cursor = part.end + 1;
      }
      source += `(?:${alternatives.join('|')})`;
      continue;
    }
    source += escapeChar(char);
    index++;
  }
  if (insideBraces) return { source, end: pattern.length };
  return { source, end: index };
}

function findClassEnd(pattern: string, open: number): number {
  let index = open + 1;
  if (pattern[index] === '!' || pattern[index] === '^') index++;
  if (pattern[index] === ']') index++;
  for (; index < pattern.length; index++) if (pattern[index] === ']') return index;
  return -1;
}

function escapeChar(char: string): string {
  return REGEX_SPECIAL.test(char) ? `\\${char}` : char;
}

/** True when the glob holds any special character (so it cannot be taken as a literal path). */
export function hasGlobSyntax(text: string): boolean {
  return /[*?[{\\]/.test(text);
}
