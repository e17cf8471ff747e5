import type { NetworkPolicy, Privileges, SandboxPolicyOptions } from '@ws/core';
import { isWsError } from '@ws/core';
import { checkSandboxPolicy, checkWorkspaceUser } from '@ws/core/backend';
import { UsageError } from './cli-args.js';

// The flags of the sandbox policy every backend takes (`limits`, `network`, `privileges`): the
// syntax is checked here; the ranges and the allow-list entries by core's own check, so that the
// command and the library agree. What a backend cannot enforce is the backend's error, at open.

/** Core's check of one piece of the policy; its INVALID_ARGUMENT is a usage error naming `label`. */
function checkWithCore(label: string, options: SandboxPolicyOptions): void {
  try {
    checkSandboxPolicy(label, options);
  } catch (error) {
    if (isWsError(error) && error.code === 'INVALID_ARGUMENT') throw new UsageError(error.message);
    throw error;
  }
}

const MIB_PER: Readonly<Record<string, number>> = { m: 1, g: 1024, t: 1024 * 1024 };

/**
 * A size in MiB: `512` (a bare number is MiB), `512M`, `2G`, `1T` (also `512MiB`, `2GB`: binary
 * units either way), a whole number of MiB.
 * @throws UsageError naming `label` for anything else.
 */
export function parseSize(label: string, text: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*(?:([mgt])(?:i?b)?)?$/i.exec(text.trim());
  const factor = MIB_PER[(match?.[2] ?? 'm').toLowerCase()] ?? 1;
  const mib = match ? Number(match[1]) * factor : Number.NaN;
  if (!Number.isInteger(mib) || mib <= 0)
    throw new UsageError(
      `${label} takes a size in MiB such as 512, 512M or 2G (a whole number of MiB), not ${JSON.stringify(text)}`,
    );
  return mib;
}

/** A number of CPUs, fractions allowed (`0.5`, `2`). @throws UsageError naming `label` otherwise. */
export function parseCpus(label: string, text: string): number {
  if (!/^\d*\.?\d+$/.test(text.trim()) || Number(text) <= 0)
    throw new UsageError(`${label} takes a number of CPUs such as 2 or 0.5, not ${JSON.stringify(text)}`);
  return Number(text);
}

/** A positive whole number. @throws UsageError naming `label` otherwise. */
export function parseCount(label: string, text: string): number {
  if (!/^[1-9]\d{0,8}$/.test(text.trim()))
    throw new UsageError(`${label} takes a positive whole number, not ${JSON.stringify(text)}`);
  return Number(text);
}

/** The parsers of the limit settings, by setting name, with the limit each sets. */
export const LIMIT_SETTINGS = {
  cpus: { limit: 'cpus', parse: parseCpus },
  memory: { limit: 'memoryMiB', parse: parseSize },
  pids: { limit: 'pids', parse: parseCount },
  disk: { limit: 'diskMiB', parse: parseSize },
} as const;

export type LimitSetting = keyof typeof LIMIT_SETTINGS;

/** One limit setting's value in the unit of its limit, checked by core. @throws UsageError. */
export function parseLimit(name: LimitSetting, label: string, text: string): number {
  const { limit, parse } = LIMIT_SETTINGS[name];
  const value = parse(label, text);
  checkWithCore(label, { limits: { [limit]: value } });
  return value;
}

/**
 * Hosts and networks of `--network-allow`: each value may hold several, comma-separated; each is an
 * address, a CIDR block, a host name or a `*.` wildcard.
 * @throws UsageError naming `label` and the entry that is none of them.
 */
export function parseAllowList(label: string, values: readonly string[]): string[] {
  const entries = values.flatMap((value) => value.split(',')).map((entry) => entry.trim());
  for (const entry of entries) {
    if (entry === '')
      throw new UsageError(
        `${label} takes hosts or CIDR blocks, comma-separated (such as registry.npmjs.org,10.0.0.0/8), not an empty entry`,
      );
    checkWithCore(label, { network: { allow: [entry] } });
  }
  return entries;
}

/** The backends that take a network by name besides `none` and `full`. */
const NAMED_NETWORKS: readonly string[] = ['docker'];

/**
 * `none`, `full`, or (docker only) a Docker network's name such as `bridge`.
 * @returns the common policy, or the name for the docker backend.
 * @throws UsageError naming `label` and the valid values for a name on another backend or a
 * malformed name.
 */
export function parseNetwork(
  label: string,
  text: string,
  backend: string,
): { network: NetworkPolicy } | { networkName: string } {
  if (text === 'none' || text === 'full') return { network: text };
  if (!NAMED_NETWORKS.includes(backend))
    throw new UsageError(
      `${label} takes none or full on the ${backend} backend (a network's name only on ${NAMED_NETWORKS.join(', ')}), not ${JSON.stringify(text)}`,
    );
  if (text === '' || /[\s/\\\0]/.test(text))
    throw new UsageError(
      `${label} takes none, full or a Docker network's name (such as bridge), not ${JSON.stringify(text)}`,
    );
  return { networkName: text };
}

/**
 * `--user`: a user name or `uid[:gid]`, as core checks it (what each backend accepts of it, a name or
 * a number, is the backend's error at open). @throws UsageError naming `label` otherwise.
 */
export function parseUser(label: string, text: string): string {
  try {
    checkWorkspaceUser(label, text);
  } catch (error) {
    if (isWsError(error) && error.code === 'INVALID_ARGUMENT') throw new UsageError(error.message);
    throw error;
  }
  return text;
}

/** `hardened` or `standard`. @throws UsageError naming `label` otherwise. */
export function parsePrivileges(label: string, text: string): Privileges {
  if (text === 'hardened' || text === 'standard') return text;
  throw new UsageError(`${label} takes hardened or standard, not ${JSON.stringify(text)}`);
}
