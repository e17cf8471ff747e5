import { readFileSync } from 'node:fs';
import { type ParseArgsConfig, parseArgs } from 'node:util';

/** Bad input on the command line: printed as one line, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export type OptionSpec = NonNullable<ParseArgsConfig['options']>;

/** What {@link parseCommand} returns for a set of options. */
export type Parsed<Options extends OptionSpec> = ReturnType<
  typeof parseArgs<{ args: string[]; options: Options; strict: true; allowPositionals: true }>
>;

/** The version of @ws/cli, read from its package.json next to dist/. */
export function cliVersion(): string {
  const text = readFileSync(new URL('../package.json', import.meta.url), 'utf8');
  return (JSON.parse(text) as { version: string }).version;
}

/**
 * Parses one command's arguments strictly: an unknown flag, a missing value or a stray positional
 * becomes a {@link UsageError} that names the command.
 */
export function parseCommand<Options extends OptionSpec>(
  command: string,
  args: string[],
  options: Options,
  allowPositionals = false,
): Parsed<Options> {
  try {
    const parsed = parseArgs({ args, options, strict: true as const, allowPositionals: true as const });
    if (!allowPositionals && parsed.positionals.length > 0) {
      throw new UsageError(`ws ${command}: unexpected argument ${JSON.stringify(parsed.positionals[0])}`);
    }
    return parsed;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
    const unknown = (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION';
    const flag = unknown ? /'(-{1,2}[^'\s=]+)/.exec(message ?? '')?.[1] : undefined;
    const near = flag?.startsWith('--') ? closest(flag.slice(2), Object.keys(options)) : undefined;
    // Node's messages suggest `--` for values starting with a dash; the first sentence is enough.
    throw new UsageError(
      `ws ${command}: ${message?.replace(/\.? To specify a positional.*$/, '').replace(/\.$/, '')}${near ? `; did you mean --${near}?` : ''} (see ws ${command} --help)`,
    );
  }
}

/** The edit distance of two short strings (insertions, deletions, substitutions, transpositions). */
function distance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = best;
    }
  return rows[a.length]![b.length]!;
}

/**
 * The candidate `word` was most likely meant as (a typo of at most a third of its length, at least
 * one edit), or undefined when none is that near.
 */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: { name: string; cost: number } | undefined;
  for (const name of candidates) {
    const cost = distance(word.toLowerCase(), name.toLowerCase());
    if (cost <= Math.max(1, Math.floor(word.length / 3)) && (!best || cost < best.cost))
      best = { name, cost };
  }
  return best?.name;
}

const UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `500ms`, `90s`, `2m`, `1h`; a bare number is seconds. @throws UsageError for anything else. */
export function parseDuration(flag: string, text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  const unit = UNITS[match?.[2] ?? 's'];
  if (!match || unit === undefined || Number(match[1]) <= 0) {
    throw new UsageError(`--${flag} takes a duration such as 90s, 2m or 500ms, not ${JSON.stringify(text)}`);
  }
  return Math.round(Number(match[1]) * unit);
}

/** Like {@link parseDuration}, but `0` is allowed (an age: `--older-than 0` means any age). */
export function parseAge(flag: string, text: string): number {
  return /^0+(?:\.0+)?(ms|s|m|h)?$/.test(text.trim()) ? 0 : parseDuration(flag, text);
}

/** A duration for people: `850ms`, `42s`, `7m`, `3h 5m`, `2d 4h`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return 'forever';
  if (ms < 1_000) return `${Math.round(ms)}ms`;
  const seconds = Math.floor(ms / 1_000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return minutes % 60 === 0 ? `${hours}h` : `${hours}h ${minutes % 60}m`;
  const days = Math.floor(hours / 24);
  return hours % 24 === 0 ? `${days}d` : `${days}d ${hours % 24}h`;
}

/** A TCP port, 0 (any free port) to 65535. */
export function parsePort(text: string): number {
  if (!/^\d+$/.test(text) || Number(text) > 65_535) {
    throw new UsageError(`--http takes a port number (0 to 65535), not ${JSON.stringify(text)}`);
  }
  return Number(text);
}

/** `KEY=VALUE` pairs of a repeatable flag into a record. */
export function parsePairs(
  flag: string,
  pairs: readonly string[] | undefined,
): Record<string, string> | undefined {
  if (!pairs || pairs.length === 0) return undefined;
  const record: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new UsageError(`--${flag} takes KEY=VALUE, not ${JSON.stringify(pair)}`);
    record[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return record;
}
