import { WsError } from '../contracts/errors.js';

const SAFE_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

/**
 * Quotes one argument for a POSIX shell so that the shell passes it through as exactly one word,
 * byte for byte. This is the only way `@ws` turns user input into shell text.
 *
 * @throws WsError `INVALID_ARGUMENT` for a string holding NUL, which no argv can carry.
 */
export function shellQuote(argument: string): string {
  if (argument.includes('\0')) {
    throw new WsError('INVALID_ARGUMENT', 'A shell argument cannot contain a NUL byte', {
      details: { argument },
    });
  }
  if (SAFE_WORD.test(argument)) return argument;
  return `'${argument.replaceAll("'", `'\\''`)}'`;
}

/** Quotes every element of `argv` with {@link shellQuote} and joins them with spaces. */
export function shellJoin(argv: readonly string[]): string {
  return argv.map(shellQuote).join(' ');
}
