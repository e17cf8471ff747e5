import { inflateRawSync } from 'node:zlib';
import { WsError } from '../../contracts/errors.js';

/** One entry of a zip's central directory, its data inflated; a name ending in `/` is a folder. */
export interface ZipEntry {
  readonly name: string;
  readonly data: Uint8Array;
}

const EOCD = 0x06054b50;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_EOCD = 0x06064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;
const MAX_U16 = 0xffff;
const MAX_U32 = 0xffffffff;

const corrupt = (why: string): WsError =>
  new WsError('INVALID_ARGUMENT', `The archive is not a valid zip: ${why}`);

/**
 * Reads a zip held in memory (stored and deflated members, ZIP64 included) from its central
 * directory. `onDeclared` sees the sum of the declared sizes before anything is inflated, and no
 * member may inflate past its declared size, so a zip bomb is refused before it expands.
 */
export function readZipEntries(raw: Uint8Array, onDeclared: (total: number) => void): ZipEntry[] {
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const u16 = (at: number) => view.getUint16(at, true);
  const u32 = (at: number) => view.getUint32(at, true);
  const u64 = (at: number) => {
    const value = view.getBigUint64(at, true);
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw corrupt('a ZIP64 field is out of range');
    return Number(value);
  };
  const need = (at: number, length: number, what: string) => {
    if (at < 0 || at + length > raw.byteLength) throw corrupt(`${what} runs past the end (truncated?)`);
  };

  let eocd = -1;
  for (let at = raw.byteLength - 22; at >= Math.max(0, raw.byteLength - 22 - MAX_U16); at--) {
    if (u32(at) === EOCD) {
      eocd = at;
      break;
    }
  }
  if (eocd < 0) throw corrupt('no end-of-central-directory record');
  let count = u16(eocd + 10);
  let size = u32(eocd + 12);
  let offset = u32(eocd + 16);
  if (count === MAX_U16 || size === MAX_U32 || offset === MAX_U32) {
    const locator = eocd - 20;
    if (locator < 0 || u32(locator) !== ZIP64_LOCATOR) throw corrupt('the ZIP64 locator is missing');
    const record = u64(locator + 8);
    need(record, 56, 'the ZIP64 end record');
    if (u32(record) !== ZIP64_EOCD) throw corrupt('the ZIP64 end record is missing');
    count = u64(record + 32);
    size = u64(record + 40);
    offset = u64(record + 48);
  }
  need(offset, size, 'the central directory');

  const headers: { name: string; method: number; compressed: number; size: number; local: number }[] = [];
  let declared = 0;
  let at = offset;
  for (let index = 0; index < count; index++) {
    need(at, 46, 'a central directory entry');
    if (u32(at) !== CENTRAL) throw corrupt('a central directory entry has a bad signature');
    const flags = u16(at + 8);
    const method = u16(at + 10);
    let compressed = u32(at + 20);
    let length = u32(at + 24);
    const nameLength = u16(at + 28);
    const extraLength = u16(at + 30);
    const commentLength = u16(at + 32);
    let local = u32(at + 42);
    need(at + 46, nameLength + extraLength, 'a member name');
    const nameBytes = raw.subarray(at + 46, at + 46 + nameLength);
    // Bit 11: the name is UTF-8; otherwise it is read byte for byte.
    const name = Buffer.from(nameBytes).toString(flags & 0x800 ? 'utf8' : 'latin1');
    if (flags & 0x1)
      throw new WsError('INVALID_ARGUMENT', `The zip member ${JSON.stringify(name)} is encrypted`);
    // ZIP64 extra field: the 64-bit values of the fields set to 0xFFFFFFFF, in this order.
    for (let extra = at + 46 + nameLength; extra + 4 <= at + 46 + nameLength + extraLength; ) {
      const id = u16(extra);
      const dataLength = u16(extra + 2);
      if (id === 0x0001) {
        let field = extra + 4;
        const next = () => {
          need(field, 8, 'a ZIP64 extra field');
          const value = u64(field);
          field += 8;
          return value;
        };
        if (length === MAX_U32) length = next();
        if (compressed === MAX_U32) compressed = next();
        if (local === MAX_U32) local = next();
      }
      extra += 4 + dataLength;
    }
    declared += length;
    onDeclared(declared);
    headers.push({ name, method, compressed, size: length, local });
    at += 46 + nameLength + extraLength + commentLength;
  }

  return headers.map((header) => {
    need(header.local, 30, `the local header of ${header.name}`);
    if (u32(header.local) !== LOCAL) throw corrupt(`the local header of ${header.name} has a bad signature`);
    const start = header.local + 30 + u16(header.local + 26) + u16(header.local + 28);
    need(start, header.compressed, `the data of ${header.name}`);
    const stored = raw.subarray(start, start + header.compressed);
    let data: Uint8Array;
    if (header.method === 0) data = Uint8Array.from(stored);
    else if (header.method === 8) {
      try {
        data = inflateRawSync(stored, { maxOutputLength: Math.max(1, header.size) });
      } catch (error) {
        throw corrupt(
          error instanceof RangeError
            ? `${header.name} inflates past its declared size`
            : `${header.name} does not inflate (${(error as Error).message})`,
        );
      }
    } else throw corrupt(`${header.name} uses compression method ${header.method} (only stored and deflate)`);
    if (data.byteLength !== header.size)
      throw corrupt(`${header.name} holds ${data.byteLength} bytes, not the ${header.size} it declares`);
    return { name: header.name, data };
  });
}
