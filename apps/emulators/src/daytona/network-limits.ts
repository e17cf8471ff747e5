import { isIPv4 } from 'node:net';
import { DaytonaHttpError } from './errors.js';

/** The most CIDR blocks Daytona's `networkAllowList` takes. */
const MAX_NETWORK_ALLOW_LIST = 5;

const DOMAIN = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i;

function listOf(value: unknown, field: string): string[] {
  if (value === undefined || value === null || value === '') return [];
  if (typeof value !== 'string') throw new DaytonaHttpError(400, `${field} must be a comma-separated string`);
  return value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}

/**
 * A create request's `networkAllowList` (IPv4 CIDR blocks, at most five) and `domainAllowList`
 * (domains, `*.` wildcards), checked as Daytona checks them and normalised (`a,b`); empty when not
 * given. The emulator records them and filters no destination.
 */
export function networkLimits(body: Record<string, unknown>): {
  networkAllowList: string;
  domainAllowList: string;
} {
  const blocks = listOf(body.networkAllowList, 'networkAllowList');
  if (blocks.length > MAX_NETWORK_ALLOW_LIST)
    throw new DaytonaHttpError(
      400,
      `networkAllowList takes at most ${MAX_NETWORK_ALLOW_LIST} CIDR blocks (got ${blocks.length})`,
    );
  for (const block of blocks) {
    const [address = '', prefix, extra] = block.split('/');
    if (
      !isIPv4(address) ||
      prefix === undefined ||
      extra !== undefined ||
      !/^\d{1,2}$/.test(prefix) ||
      Number(prefix) > 32
    )
      throw new DaytonaHttpError(
        400,
        `Invalid network format: ${block}. Give IPv4 CIDR blocks (e.g. "192.168.1.0/24")`,
      );
  }
  const domains = listOf(body.domainAllowList, 'domainAllowList');
  for (const domain of domains)
    if (!DOMAIN.test(domain)) throw new DaytonaHttpError(400, `Invalid domain: ${domain}`);
  return { networkAllowList: blocks.join(','), domainAllowList: domains.join(',') };
}
