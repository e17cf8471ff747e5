import { gzipSync } from 'node:zlib';
import { zipSync } from 'fflate';

/** One entry of a test archive. */
export interface TestEntry {
  path: string;
  content?: string;
  /** A symbolic link to this target (tar only). */
  link?: string;
  directory?: boolean;
}

function header(name: string, size: number, type: string, linkName = ''): Uint8Array {
  const block = new Uint8Array(512);
  const put = (text: string, offset: number, length: number) =>
    block.set(Buffer.from(text, 'utf8').subarray(0, length), offset);
  // Octal digits filling the field but its last byte, which stays NUL.
  const octal = (value: number, length: number) => value.toString(8).padStart(length - 1, '0');
  put(name, 0, 100);
  put(octal(type === '5' ? 0o755 : 0o644, 8), 100, 8);
  put(octal(0, 8), 108, 8);
  put(octal(0, 8), 116, 8);
  put(octal(size, 12), 124, 12);
  put(octal(Math.floor(Date.now() / 1000), 12), 136, 12);
  put('        ', 148, 8);
  put(type, 156, 1);
  put(linkName, 157, 100);
  put('ustar\u000000', 257, 8);
  let sum = 0;
  for (const byte of block) sum += byte;
  put(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8);
  return block;
}

/** A ustar archive of the entries (names up to 100 bytes). */
export function makeTar(entries: readonly TestEntry[]): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const entry of entries) {
    if (entry.directory) parts.push(header(entry.path, 0, '5'));
    else if (entry.link !== undefined) parts.push(header(entry.path, 0, '2', entry.link));
    else {
      const data = Buffer.from(entry.content ?? '', 'utf8');
      parts.push(
        header(entry.path, data.length, '0'),
        data,
        new Uint8Array((512 - (data.length % 512)) % 512),
      );
    }
  }
  parts.push(new Uint8Array(1024));
  return Buffer.concat(parts);
}

/** The same entries as tar.gz. */
export function makeTarGz(entries: readonly TestEntry[]): Uint8Array {
  return gzipSync(makeTar(entries));
}

/** A zip of the file entries. */
export function makeZip(entries: readonly TestEntry[]): Uint8Array {
  const files: Record<string, Uint8Array> = {};
  for (const entry of entries)
    if (!entry.directory && entry.link === undefined)
      files[entry.path] = Buffer.from(entry.content ?? '', 'utf8');
  return zipSync(files);
}

/** A SKILL.md with front matter. */
export function skillMarkdown(
  name: string,
  description: string,
  body = `# ${name}\n\nUse it well.\n`,
): string {
  return `---\nname: ${name}\ndescription: ${description}\n---\n${body}`;
}
