// Just enough of the tar format for the archive API to carry one small file each way.

const BLOCK = 512;

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, '0')}\0`;
}

/** A tar archive holding one regular file (a short name, owned by root). */
export function tarOneFile(name: string, content: Uint8Array, mode = 0o644): Buffer {
  if (Buffer.byteLength(name) > 99) throw new Error(`tar name too long: ${name}`);
  const header = Buffer.alloc(BLOCK);
  header.write(name, 0, 100, 'utf8');
  header.write(octal(mode, 8), 100, 'ascii');
  header.write(octal(0, 8), 108, 'ascii');
  header.write(octal(0, 8), 116, 'ascii');
  header.write(octal(content.length, 12), 124, 'ascii');
  header.write(octal(Math.floor(Date.now() / 1000), 12), 136, 'ascii');
  header.write('        ', 148, 'ascii');
  header.write('0', 156, 'ascii');
  header.write('ustar\u000000', 257, 'ascii');
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  const padding = (BLOCK - (content.length % BLOCK)) % BLOCK;
  return Buffer.concat([header, Buffer.from(content), Buffer.alloc(padding), Buffer.alloc(BLOCK * 2)]);
}

/** The content of the first regular file of a (small) tar stream, or undefined when it has none. */
export async function firstFileOfTar(stream: AsyncIterable<Uint8Array>): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  const archive = Buffer.concat(chunks);
  let offset = 0;
  while (offset + BLOCK <= archive.length) {
    const header = archive.subarray(offset, offset + BLOCK);
    if (header.every((byte) => byte === 0)) return undefined;
    const size = Number.parseInt(header.toString('ascii', 124, 136).replace(/\0.*$/, '').trim() || '0', 8);
    const type = String.fromCharCode(header[156] ?? 0);
    const start = offset + BLOCK;
    if (type === '0' || type === '\0') return archive.subarray(start, start + size);
    offset = start + Math.ceil(size / BLOCK) * BLOCK; // a pax/long-name header or a directory: skip
  }
  return undefined;
}
