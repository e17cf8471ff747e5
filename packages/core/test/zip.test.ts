import { deflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { isWsError } from '../src/contracts/errors.js';
import { readArchive } from '../src/internal/skills/archive.js';
import { readZipEntries } from '../src/internal/skills/zip.js';

interface Member {
  name: string;
  data: Uint8Array;
  deflate?: boolean;
  /** Write this size in the headers instead of the real one. */
  declaredSize?: number;
  zip64?: boolean;
  flags?: number;
  method?: number;
}

/** Builds a zip byte by byte (so the tests can also build the broken and the ZIP64 ones). */
function zip(members: Member[], options: { zip64End?: boolean } = {}): Uint8Array {
  const chunks: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const member of members) {
    const name = Buffer.from(member.name, 'utf8');
    const body = member.deflate ? deflateRawSync(member.data) : Buffer.from(member.data);
    const size = member.declaredSize ?? member.data.byteLength;
    const method = member.method ?? (member.deflate ? 8 : 0);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x800 | (member.flags ?? 0), 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt32LE(body.byteLength, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.byteLength, 26);
    chunks.push(local, name, body);
    const extra = member.zip64 ? Buffer.alloc(4 + 24) : Buffer.alloc(0);
    if (member.zip64) {
      extra.writeUInt16LE(0x0001, 0);
      extra.writeUInt16LE(24, 2);
      extra.writeBigUInt64LE(BigInt(size), 4);
      extra.writeBigUInt64LE(BigInt(body.byteLength), 12);
      extra.writeBigUInt64LE(BigInt(offset), 20);
    }
    const header = Buffer.alloc(46);
    header.writeUInt32LE(0x02014b50, 0);
    header.writeUInt16LE(45, 4);
    header.writeUInt16LE(45, 6);
    header.writeUInt16LE(0x800 | (member.flags ?? 0), 8);
    header.writeUInt16LE(method, 10);
    header.writeUInt32LE(member.zip64 ? 0xffffffff : body.byteLength, 20);
    header.writeUInt32LE(member.zip64 ? 0xffffffff : size, 24);
    header.writeUInt16LE(name.byteLength, 28);
    header.writeUInt16LE(extra.byteLength, 30);
    header.writeUInt32LE(member.zip64 ? 0xffffffff : offset, 42);
    central.push(header, name, extra);
    offset += local.byteLength + name.byteLength + body.byteLength;
  }
  const directory = Buffer.concat(central);
  const tail: Buffer[] = [];
  if (options.zip64End) {
    const record = Buffer.alloc(56);
    record.writeUInt32LE(0x06064b50, 0);
    record.writeBigUInt64LE(44n, 4);
    record.writeBigUInt64LE(BigInt(members.length), 24);
    record.writeBigUInt64LE(BigInt(members.length), 32);
    record.writeBigUInt64LE(BigInt(directory.byteLength), 40);
    record.writeBigUInt64LE(BigInt(offset), 48);
    const locator = Buffer.alloc(20);
    locator.writeUInt32LE(0x07064b50, 0);
    locator.writeBigUInt64LE(BigInt(offset + directory.byteLength), 8);
    locator.writeUInt32LE(1, 16);
    tail.push(record, locator);
  }
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(options.zip64End ? 0xffff : members.length, 8);
  end.writeUInt16LE(options.zip64End ? 0xffff : members.length, 10);
  end.writeUInt32LE(options.zip64End ? 0xffffffff : directory.byteLength, 12);
  end.writeUInt32LE(options.zip64End ? 0xffffffff : offset, 16);
  return new Uint8Array(Buffer.concat([...chunks, directory, ...tail, end]));
}

const text = (value: string) => new TextEncoder().encode(value);
const names = (raw: Uint8Array) => readZipEntries(raw, () => {}).map((entry) => entry.name);

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('zip reader', () => {
  it('reads stored and deflated members, folders included', () => {
    const big = text('line\n'.repeat(10_000));
    const entries = readZipEntries(
      zip([
        { name: 'skill/', data: new Uint8Array() },
        { name: 'skill/SKILL.md', data: text('---\nname: a\n---\n') },
        { name: 'skill/big.txt', data: big, deflate: true },
      ]),
      () => {},
    );
    expect(entries.map((entry) => entry.name)).toEqual(['skill/', 'skill/SKILL.md', 'skill/big.txt']);
    expect(Buffer.from(entries[2]!.data).equals(Buffer.from(big))).toBe(true);
  });

  it('reads ZIP64 end records and extra fields', () => {
    const raw = zip(
      [
        { name: 'a.txt', data: text('alpha'), zip64: true },
        { name: 'b.txt', data: text('beta'.repeat(100)), zip64: true, deflate: true },
      ],
      { zip64End: true },
    );
    const entries = readZipEntries(raw, () => {});
    expect(entries.map((entry) => [entry.name, entry.data.byteLength])).toEqual([
      ['a.txt', 5],
      ['b.txt', 400],
    ]);
  });

  it('refuses a bomb from the declared sizes, before inflating anything', async () => {
    const bomb = zip([
      { name: 'bomb', data: new Uint8Array(64 * 1024), deflate: true, declaredSize: 2 ** 31 },
    ]);
    const error = await failure(readArchive({ format: 'zip', data: bomb }, 1024 * 1024));
    expect(isWsError(error, 'LIMIT_EXCEEDED')).toBe(true);
  });

  it('refuses a member that inflates past its declared size', () => {
    const liar = zip([{ name: 'liar', data: new Uint8Array(64 * 1024), deflate: true, declaredSize: 10 }]);
    expect(() => names(liar)).toThrow(/inflates past its declared size/);
  });

  it('refuses truncated, encrypted and unknown-method archives with INVALID_ARGUMENT', async () => {
    const good = zip([{ name: 'a.txt', data: text('alpha') }]);
    for (const raw of [
      good.subarray(0, good.byteLength - 10),
      good.subarray(10),
      zip([{ name: 'secret', data: text('x'), flags: 1 }]),
      zip([{ name: 'lzma', data: text('x'), method: 14 }]),
      text('not a zip at all'),
    ]) {
      const error = await failure(readArchive({ format: 'zip', data: raw }));
      expect(isWsError(error, 'INVALID_ARGUMENT'), String(error)).toBe(true);
    }
  });

  it('keeps member paths checked: a member climbing out is refused', async () => {
    const error = await failure(
      readArchive({ format: 'zip', data: zip([{ name: '../evil', data: text('x') }]) }),
    );
    expect(isWsError(error, 'INVALID_ARGUMENT')).toBe(true);
    expect(String(error)).toContain('..');
  });
});
