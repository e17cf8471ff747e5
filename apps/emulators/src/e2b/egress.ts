import { isIP } from 'node:net';
import { HttpError, isRecord } from '../http/http-util.js';

/** A sandbox's egress rules as E2B takes them (`network.allowOut`, `network.denyOut`). */
export interface EgressRules {
  allowOut: string[];
  denyOut: string[];
}

/** E2B's "all traffic" block (`ALL_TRAFFIC` in the SDK). */
const ALL_TRAFFIC = '0.0.0.0/0';

const DOMAIN = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i;

function isAddressBlock(entry: string): boolean {
  const [address = '', prefix, extra] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return false;
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128));
}

function entries(value: unknown, field: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((entry) => typeof entry !== 'string'))
    throw new HttpError(400, `network.${field} must be an array of strings`);
  return value as string[];
}

/**
 * The egress rules of a create request's `network`, checked as E2B checks them: deny entries are
 * addresses or CIDR blocks, allow entries may also be domains, and a domain is allowed only when all
 * other traffic is denied. Undefined when the request sets none. The other `network` fields (public
 * traffic, rules, an egress proxy) are not emulated and are ignored.
 */
export function egressRules(network: unknown): EgressRules | undefined {
  if (network === undefined || network === null) return undefined;
  if (!isRecord(network)) throw new HttpError(400, 'network must be an object');
  const allowOut = entries(network.allowOut, 'allowOut');
  const denyOut = entries(network.denyOut, 'denyOut');
  for (const entry of denyOut)
    if (!isAddressBlock(entry))
      throw new HttpError(
        400,
        `invalid denyOut entry "${entry}": only IP addresses and CIDR blocks can be denied`,
      );
  for (const entry of allowOut) {
    if (isAddressBlock(entry)) continue;
    if (!DOMAIN.test(entry))
      throw new HttpError(400, `invalid allowOut entry "${entry}": not an IP address, CIDR block or domain`);
    if (!denyOut.includes(ALL_TRAFFIC))
      throw new HttpError(
        400,
        `allowing the domain "${entry}" requires denying all other traffic (${ALL_TRAFFIC})`,
      );
  }
  return allowOut.length + denyOut.length > 0 ? { allowOut, denyOut } : undefined;
}

/**
 * Whether a sandbox gets no network at all: internet access turned off, or all traffic denied with
 * nothing allowed. An allow list the emulator cannot enforce (it filters no destination) leaves the
 * network as it is.
 */
export function isOffline(allowInternetAccess: boolean | null, egress: EgressRules | undefined): boolean {
  if (allowInternetAccess === false) return true;
  return egress !== undefined && egress.allowOut.length === 0 && egress.denyOut.includes(ALL_TRAFFIC);
}
