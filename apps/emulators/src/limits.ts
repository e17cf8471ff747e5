/**
 * The vendors' documented limits, as each emulator enforces them. Every emulator has a table of named
 * limits with the real service's defaults (`E2B_LIMITS`, …); its `limits` option and `ws-emulator
 * --limit NAME=VALUE` change entries, so that a test can meet a limit without moving gigabytes.
 */

/** A vendor's limits: a name (with its unit in it, `uploadBytes`, `timeoutMaxMs`) → a number. */
export type LimitTable = Readonly<Record<string, number>>;

/** Thrown for an unknown limit name or a value that is not a non-negative number. */
export class LimitOptionError extends Error {}

/**
 * `defaults` with `overrides` applied. A name `defaults` does not have, or a value that is not a finite
 * number ≥ 0, throws {@link LimitOptionError} naming the limits there are.
 */
export function resolveLimits<T extends LimitTable>(
  defaults: T,
  overrides: Readonly<Partial<Record<keyof T, number>>> | undefined,
  vendor: string,
): Readonly<T> {
  const out: Record<string, number> = { ...defaults };
  for (const [name, value] of Object.entries(overrides ?? {})) {
    if (value === undefined) continue;
    if (!Object.hasOwn(defaults, name))
      throw new LimitOptionError(
        `${vendor} has no limit ${JSON.stringify(name)}; its limits are ${Object.keys(defaults).join(', ')}`,
      );
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
      throw new LimitOptionError(`the ${vendor} limit ${name} takes a number ≥ 0, not ${String(value)}`);
    out[name] = value;
  }
  return Object.freeze(out) as Readonly<T>;
}

/** `NAME=VALUE` pairs of `--limit` as numbers; a malformed pair throws {@link LimitOptionError}. */
export function parseLimitPairs(pairs: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const pair of pairs) {
    const match = /^([A-Za-z][A-Za-z0-9]*)=(\d+(?:\.\d+)?)$/.exec(pair);
    if (!match) throw new LimitOptionError(`--limit takes NAME=NUMBER, not ${pair}`);
    out[match[1]!] = Number(match[2]);
  }
  return out;
}
