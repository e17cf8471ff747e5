import { WsError } from '@ws/core';

/**
 * The little tar the Docker archive API needs: a streamed archive holding one file (and the folders
 * above it), and a streamed reader of the first entry of an archive the API returns.
 */

type EntryType = '0' | '5' | 'x';

/** The ustar name and prefix fields of a path, or undefined when it does not fit them. */
function ustarName(name: string): { name: string; prefix: string } | undefined {
  if (Buffer.byteLength(name) <= 100) return { name, prefix: '' };
  // ustar splits long names at a slash: up to 155 bytes of prefix and 100 of name.
  const cut = name.lastIndexOf('/', name.length - 2);
  if (cut <= 0) return undefined;
  const split = { name: name.slice(cut + 1), prefix: name.slice(0, cut) };
  return Buffer.byteLength(split.prefix) <= 155 && Buffer.byteLength(split.name) <= 100 ? split : undefined;
}

/** Who owns the archive's entries (uid and gid); root when not given. */
export interface TarOwner {
  readonly uid: number;
  readonly gid: number;
}

function header(
  fields: { name: string; prefix: string },
  size: number,
  type: EntryType,
  mode: number,
  owner: TarOwner = { uid: 0, gid: 0 },
): Uint8Array {
  const block = new Uint8Array(512);
  const put = (text: string, offset: number) => block.set(Buffer.from(text, 'utf8'), offset);
  const octal = (value: number, length: number) => value.toString(8).padStart(length - 1, '0');
  put(fields.name, 0);
  put(octal(mode, 8), 100);
  put(octal(owner.uid, 8), 108);
  put(octal(owner.gid, 8), 116);
  if (size > 0o77777777777)
    throw new WsError('LIMIT_EXCEEDED', 'Files over 8 GiB cannot be written through the archive API');
  put(octal(size, 12), 124);
  put(octal(Math.floor(Date.now() / 1000), 12), 136);
  put('        ', 148);
  put(type, 156);
  put('ustar\u000000', 257);
  put(fields.prefix, 345);
  let sum = 0;
  for (const byte of block) sum += byte;
  put(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  return block;
}

/** One PAX record: "<length> <key>=<value>\n", where the length counts itself. */
function paxRecord(key: string, value: string): Buffer {
  const body = ` ${key}=${value}\n`;
  const bodyLength = Buffer.byteLength(body);
  let length = bodyLength + 1;
  while (String(length).length + bodyLength !== length) length = String(length).length + bodyLength;
  return Buffer.from(`${length}${body}`, 'utf8');
}

/** The headers of one entry: ustar alone, or a PAX header first when the path does not fit ustar. */
function entryHeaders(
  name: string,
  size: number,
  type: '0' | '5',
  mode: number,
  owner: TarOwner | undefined,
): Uint8Array[] {
  const fields = ustarName(name);
  if (fields) return [header(fields, size, type, mode, owner)];
  const record = paxRecord('path', name);
  const padding = new Uint8Array((512 - (record.length % 512)) % 512);
  return [
    header({ name: 'PaxHeader', prefix: '' }, record.length, 'x', 0o644),
    record,
    padding,
    // Readers take the path from the PAX record; this field only needs to be valid.
    header({ name: 'ws-long-name', prefix: '' }, size, type, mode, owner),
  ];
}

/**
 * A tar stream of `directories` (relative, parents first) and one file of `size` bytes whose
 * content comes from `content`. Fails when the content is not exactly `size` bytes.
 */
export async function* tarOneFile(
  directories: readonly string[],
  file: string,
  size: number,
  mode: number,
  content: AsyncIterable<Uint8Array>,
  owner?: TarOwner,
): AsyncIterable<Uint8Array> {
  for (const directory of directories) yield* entryHeaders(`${directory}/`, 0, '5', 0o755, owner);
  yield* entryHeaders(file, size, '0', mode, owner);
  let written = 0;
  for await (const chunk of content) {
    written += chunk.byteLength;
    if (written > size) throw new WsError('INVALID_ARGUMENT', 'The content is longer than announced');
    yield chunk;
  }
  if (written !== size) throw new WsError('INVALID_ARGUMENT', 'The content is shorter than announced');
  const padding = (512 - (size % 512)) % 512;
  if (padding > 0) yield new Uint8Array(padding);
  yield new Uint8Array(1024);
}

/** The first entry of a tar stream: its type and, for a regular file, its bytes as they stream. */
export interface FirstEntry {
  readonly type: 'file' | 'directory' | 'other';
  readonly size: number;
  readonly content: AsyncIterable<Uint8Array>;
}

/** Reads the first entry of a tar stream (skipping pax and GNU long-name headers). */
export async function firstTarEntry(source: AsyncIterable<Uint8Array>): Promise<FirstEntry> {
  const iterator = source[Symbol.asyncIterator]();
  let buffer: Buffer = Buffer.alloc(0);
  const fill = async (length: number): Promise<boolean> => {
    while (buffer.length < length) {
      const next = await iterator.next();
      if (next.done) return false;
      buffer = buffer.length === 0 ? Buffer.from(next.value) : Buffer.concat([buffer, next.value]);
    }
    return true;
  };
  for (;;) {
    if (!(await fill(512))) throw new WsError('BACKEND_ERROR', 'The archive ended before its first entry');
    const block = buffer.subarray(0, 512);
    const size = Number.parseInt(
      block.subarray(124, 136).toString('latin1').replace(/\0.*$/s, '').trim() || '0',
      8,
    );
    const type = String.fromCharCode(block[156] || 48);
    buffer = buffer.subarray(512);
    if (type === 'x' || type === 'g' || type === 'L' || type === 'K') {
      const skip = Math.ceil(size / 512) * 512;
      if (!(await fill(skip))) throw new WsError('BACKEND_ERROR', 'The archive ended inside a header');
      buffer = buffer.subarray(skip);
      continue;
    }
    const kind = type === '0' || type === '7' ? 'file' : type === '5' ? 'directory' : 'other';
    const leftover = buffer;
    const content: AsyncIterable<Uint8Array> = {
      async *[Symbol.asyncIterator]() {
        let remaining = kind === 'file' ? size : 0;
        let pending: Buffer = leftover;
        try {
          while (remaining > 0) {
            if (pending.length === 0) {
              const next = await iterator.next();
              if (next.done) throw new WsError('BACKEND_ERROR', 'The archive ended inside the file');
              pending = Buffer.from(next.value);
            }
            const take = Math.min(remaining, pending.length);
            yield pending.subarray(0, take);
            pending = pending.subarray(take);
            remaining -= take;
          }
        } finally {
          // Also when the reader stops early: the source (an HTTP response) must not stay open.
          await iterator.return?.();
        }
      },
    };
    return { type: kind, size, content };
  }
}

/** A tar archive of one folder entry (`name`, relative), with its mode and owner: extracting it over an existing folder sets both. */
export function tarFolder(name: string, mode: number, owner: TarOwner): Uint8Array {
  return Buffer.concat([...entryHeaders(`${name}/`, 0, '5', mode, owner), new Uint8Array(1024)]);
}
