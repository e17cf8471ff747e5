import { gunzipSync } from 'node:zlib';
import { WsError } from '../../contracts/errors.js';
import type { SkillArchive } from '../../contracts/skill.js';
import { readZipEntries } from './zip.js';

/** One member of an archive, checked to stay inside the destination. */
export interface ArchiveMember {
  /** Relative, normalised, `/`-separated path; never absolute, never with a `..` segment. */
  readonly path: string;
  readonly type: 'file' | 'directory' | 'symlink';
  readonly data?: Uint8Array;
  /** Permission bits (files and directories). */
  readonly mode?: number;
  /** For symbolic links: the target, relative and inside the destination. */
  readonly target?: string;
}

/** 500 MiB: the default limit on what an archive may expand to. */
export const DEFAULT_MAX_EXTRACTED_BYTES = 500 * 1024 * 1024;

const unsafe = (member: string, why: string): WsError =>
  new WsError('INVALID_ARGUMENT', `Unsafe archive member ${JSON.stringify(member)}: ${why}`, {
    details: { member },
  });

const tooLarge = (size: number, limit: number): WsError =>
  new WsError('LIMIT_EXCEEDED', `The archive expands to ${size} bytes; the limit is ${limit}`, {
    details: { size, limit },
  });

/** Normalises a member path, refusing anything that could land outside the destination. */
export function safeMemberPath(raw: string): string {
  if (raw.includes('\0')) throw unsafe(raw, 'it contains a NUL byte');
  const slashed = raw.replaceAll('\\', '/');
  if (slashed.startsWith('/') || /^[A-Za-z]:/.test(slashed)) throw unsafe(raw, 'it is an absolute path');
  const segments = slashed.split('/').filter((segment) => segment !== '' && segment !== '.');
  if (segments.includes('..')) throw unsafe(raw, 'it climbs out with ".."');
  return segments.join('/');
}

async function collect(data: Uint8Array | AsyncIterable<Uint8Array>, limit: number): Promise<Uint8Array> {
  if (data instanceof Uint8Array) {
    if (data.byteLength > limit) throw tooLarge(data.byteLength, limit);
    return data;
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of data) {
    size += chunk.byteLength;
    if (size > limit) throw tooLarge(size, limit);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * Reads a zip, tar or tar.gz archive in memory and returns its members, checked: no member or link
 * may leave the destination, and the expanded size may not pass `maxExtractedBytes` (checked against
 * the declared sizes first and the real ones after). Nothing is written anywhere.
 *
 * @throws WsError `INVALID_ARGUMENT` for an unsafe member or a corrupt archive; `LIMIT_EXCEEDED` when it is too large.
 */
export async function readArchive(
  archive: SkillArchive,
  maxExtractedBytes = DEFAULT_MAX_EXTRACTED_BYTES,
): Promise<ArchiveMember[]> {
  const raw = await collect(archive.data, maxExtractedBytes + 1024 * 1024);
  let members: ArchiveMember[];
  if (archive.format === 'zip') members = readZip(raw, maxExtractedBytes);
  else if (archive.format === 'tar') members = readTar(raw, maxExtractedBytes);
  else if (archive.format === 'tar.gz') {
    let tar: Uint8Array;
    try {
      // Tar headers and padding add to the content; the content limit is enforced on the members.
      tar = gunzipSync(raw, { maxOutputLength: maxExtractedBytes + 64 * 1024 * 1024 });
    } catch (error) {
      if (error instanceof RangeError) throw tooLarge(maxExtractedBytes + 1, maxExtractedBytes);
      throw new WsError('INVALID_ARGUMENT', `The archive is not valid gzip: ${(error as Error).message}`, {
        cause: error,
      });
    }
    members = readTar(tar, maxExtractedBytes);
  } else {
    throw new WsError(
      'INVALID_ARGUMENT',
      `Unknown archive format ${JSON.stringify(archive.format)}; use zip, tar or tar.gz`,
    );
  }
  checkMembers(members);
  return members;
}

function readZip(raw: Uint8Array, limit: number): ArchiveMember[] {
  // A name given twice keeps its last entry, as unzip does.
  const files = new Map<string, Uint8Array>();
  for (const entry of readZipEntries(raw, (declared) => {
    if (declared > limit) throw tooLarge(declared, limit);
  }))
    files.set(entry.name, entry.data);
  const members: ArchiveMember[] = [];
  let actual = 0;
  for (const [name, data] of files) {
    const path = safeMemberPath(name);
    if (path === '') continue;
    if (name.endsWith('/')) {
      members.push({ path, type: 'directory' });
      continue;
    }
    actual += data.byteLength;
    if (actual > limit) throw tooLarge(actual, limit);
    members.push({ path, type: 'file', data, mode: 0o644 });
  }
  return members;
}

function octal(field: Uint8Array): number {
  // Base-256 (GNU) for sizes past 8 GiB: the high bit of the first byte is set.
  if (field[0] !== undefined && field[0] & 0x80) {
    let value = field[0] & 0x7f;
    for (let index = 1; index < field.length; index++) value = value * 256 + field[index]!;
    return value;
  }
  const text = Buffer.from(field).toString('latin1').replace(/\0.*$/s, '').trim();
  return text === '' ? 0 : Number.parseInt(text, 8);
}

function cString(field: Uint8Array): string {
  const end = field.indexOf(0);
  return Buffer.from(end === -1 ? field : field.subarray(0, end)).toString('utf8');
}

function parsePax(data: Uint8Array): Record<string, string> {
  const records: Record<string, string> = {};
  let text = Buffer.from(data).toString('utf8');
  while (text.length > 0) {
    const space = text.indexOf(' ');
    const length = Number.parseInt(text.slice(0, space), 10);
    if (!Number.isFinite(length) || length <= 0) break;
    const record = text.slice(space + 1, length - 1);
    const equals = record.indexOf('=');
    if (equals > 0) records[record.slice(0, equals)] = record.slice(equals + 1);
    text = text.slice(length);
  }
  return records;
}

function readTar(raw: Uint8Array, limit: number): ArchiveMember[] {
  const members: ArchiveMember[] = [];
  const byPath = new Map<string, ArchiveMember>();
  let offset = 0;
  let total = 0;
  let longName: string | undefined;
  let longLink: string | undefined;
  let pax: Record<string, string> = {};
  while (offset + 512 <= raw.byteLength) {
    const header = raw.subarray(offset, offset + 512);
    if (header.every((byte) => byte === 0)) break;
    let sum = 0;
    for (let index = 0; index < 512; index++) sum += index >= 148 && index < 156 ? 32 : header[index]!;
    if (sum !== octal(header.subarray(148, 156)))
      throw new WsError(
        'INVALID_ARGUMENT',
        `The archive is not a valid tar (bad header checksum at byte ${offset})`,
      );
    const size = octal(header.subarray(124, 136));
    const type = String.fromCharCode(header[156] || 48);
    const dataStart = offset + 512;
    const data = raw.subarray(dataStart, dataStart + size);
    if (data.byteLength < size) throw new WsError('INVALID_ARGUMENT', 'The archive is truncated');
    offset = dataStart + Math.ceil(size / 512) * 512;
    if (type === 'L') {
      longName = cString(data);
      continue;
    }
    if (type === 'K') {
      longLink = cString(data);
      continue;
    }
    if (type === 'x') {
      pax = parsePax(data);
      continue;
    }
    if (type === 'g') continue;
    const prefix = Buffer.from(header.subarray(257, 263)).toString('latin1').startsWith('ustar')
      ? cString(header.subarray(345, 500))
      : '';
    const name =
      pax.path ??
      longName ??
      (prefix ? `${prefix}/${cString(header.subarray(0, 100))}` : cString(header.subarray(0, 100)));
    const linkName = pax.linkpath ?? longLink ?? cString(header.subarray(157, 257));
    const mode = octal(header.subarray(100, 108)) & 0o7777;
    longName = undefined;
    longLink = undefined;
    pax = {};
    const path = safeMemberPath(name);
    if (path === '') continue;
    let member: ArchiveMember;
    if (type === '0' || type === '7') {
      total += size;
      if (total > limit) throw tooLarge(total, limit);
      member = { path, type: 'file', data, mode };
    } else if (type === '5') {
      member = { path, type: 'directory', mode };
    } else if (type === '2') {
      member = { path, type: 'symlink', target: linkName };
    } else if (type === '1') {
      // A hard link becomes a copy of the member it names, which must come earlier in the archive.
      const original = byPath.get(safeMemberPath(linkName));
      if (original?.type !== 'file')
        throw unsafe(
          name,
          `it links to ${JSON.stringify(linkName)}, which is not a file earlier in the archive`,
        );
      total += original.data?.byteLength ?? 0;
      if (total > limit) throw tooLarge(total, limit);
      member = { path, type: 'file', ...(original.data ? { data: original.data } : {}), mode };
    } else {
      throw unsafe(name, `entries of tar type ${JSON.stringify(type)} (devices, FIFOs) are not allowed`);
    }
    members.push(member);
    byPath.set(path, member);
  }
  return members;
}

/** How many links one path may pass through before it counts as a loop (as the kernel's ELOOP). */
const MAX_LINK_HOPS = 40;

/**
 * Where `path` leads once the links the archive itself creates are followed, segment by segment from
 * the destination root: a segment naming a link is replaced by the link's target (read from the
 * link's folder), `..` climbs one level. Returns the segments of the final path, or why it fails.
 * `..` is never applied to text alone: `l/..` with `l` a link climbs from where `l` leads.
 */
function resolveInArchive(path: string, links: ReadonlyMap<string, string>): string[] | 'escapes' | 'loops' {
  const pending = path.split('/').reverse();
  const resolved: string[] = [];
  let hops = 0;
  while (pending.length > 0) {
    const segment = pending.pop()!;
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (resolved.length === 0) return 'escapes';
      resolved.pop();
      continue;
    }
    const target = links.get([...resolved, segment].join('/'));
    if (target === undefined) {
      resolved.push(segment);
      continue;
    }
    if (++hops > MAX_LINK_HOPS) return 'loops';
    pending.push(...target.split('/').reverse());
  }
  return resolved;
}

/**
 * Symbolic links must lead inside the destination once every link of the archive on their way is
 * followed (a chain of links that only looks contained is refused), and no member may sit below a
 * link.
 */
export function checkMembers(members: readonly ArchiveMember[]): void {
  const links = new Map<string, string>();
  for (const member of members) {
    if (member.type !== 'symlink') continue;
    const target = member.target ?? '';
    if (target === '' || target.startsWith('/') || target.includes('\0'))
      throw unsafe(member.path, `its link target ${JSON.stringify(target)} is absolute or empty`);
    links.set(member.path, target);
  }
  for (const [path, target] of links) {
    const outcome = resolveInArchive(path, links);
    if (outcome === 'escapes')
      throw unsafe(path, `its link target ${JSON.stringify(target)} leaves the destination`);
    if (outcome === 'loops') throw unsafe(path, 'its links form a loop or a chain that is too long');
  }
  for (const member of members) {
    const segments = member.path.split('/');
    for (let length = 1; length < segments.length; length++) {
      if (links.has(segments.slice(0, length).join('/')))
        throw unsafe(member.path, 'it lies below a symbolic link');
    }
  }
}
