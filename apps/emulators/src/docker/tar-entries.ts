// A tar writer for a few small entries with owners and modes (the archive API applies both), for what
// must be put in a container that holds no capability to do it itself (say, a new account's home).

const BLOCK = 512;

/** One entry of {@link tarEntries}; `name` is relative to the extraction folder (no leading `/`). */
export interface TarEntry {
  name: string;
  type: 'file' | 'directory';
  content?: Uint8Array;
  mode: number;
  uid: number;
  gid: number;
}

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, '0')}\0`;
}

function header(entry: TarEntry, size: number): Buffer {
  const name = entry.type === 'directory' && !entry.name.endsWith('/') ? `${entry.name}/` : entry.name;
  if (Buffer.byteLength(name) > 99) throw new Error(`tar name too long: ${name}`);
  const block = Buffer.alloc(BLOCK);
  block.write(name, 0, 100, 'utf8');
  block.write(octal(entry.mode & 0o7777, 8), 100, 'ascii');
  block.write(octal(entry.uid, 8), 108, 'ascii');
  block.write(octal(entry.gid, 8), 116, 'ascii');
  block.write(octal(size, 12), 124, 'ascii');
  block.write(octal(Math.floor(Date.now() / 1000), 12), 136, 'ascii');
  block.write('        ', 148, 'ascii');
  block.write(entry.type === 'directory' ? '5' : '0', 156, 'ascii');
  block.write('ustar\u000000', 257, 'ascii');
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return block;
}

/** A tar archive of regular files and directories with the given owners and modes. */
export function tarEntries(entries: readonly TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    const content = entry.type === 'file' ? Buffer.from(entry.content ?? new Uint8Array()) : Buffer.alloc(0);
    parts.push(header(entry, content.length), content);
    const padding = (BLOCK - (content.length % BLOCK)) % BLOCK;
    if (padding > 0) parts.push(Buffer.alloc(padding));
  }
  parts.push(Buffer.alloc(BLOCK * 2));
  return Buffer.concat(parts);
}
