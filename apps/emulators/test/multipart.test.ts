import { describe, expect, it } from 'vitest';
import { MultipartError, multipartBoundary, parseMultipart } from '../src/http/multipart.js';

async function* chunked(bytes: Buffer, size: number): AsyncGenerator<Uint8Array> {
  for (let offset = 0; offset < bytes.length; offset += size) yield bytes.subarray(offset, offset + size);
}

async function parts(body: Buffer, boundary: string, chunkSize: number) {
  const out: { name?: string; filename?: string; content: Buffer }[] = [];
  for await (const part of parseMultipart(chunked(body, chunkSize), boundary)) {
    const content: Buffer[] = [];
    for await (const chunk of part.body) content.push(chunk);
    out.push({
      ...(part.name ? { name: part.name } : {}),
      ...(part.filename ? { filename: part.filename } : {}),
      content: Buffer.concat(content),
    });
  }
  return out;
}

describe('multipart/form-data parsing', () => {
  it('reads the body FormData builds, across every chunk size, binary-safe', async () => {
    const binary = Buffer.from(Array.from({ length: 3000 }, (_, index) => (index * 31) & 255));
    const form = new FormData();
    form.append('file', new Blob([binary]), '/tmp/a "quoted"\nname.bin');
    form.append('file', new Blob(['second\r\n--not-a-boundary']), 'relative/ünïcode.txt');
    form.append('note', 'ignored by the emulator, parsed all the same');
    const request = new Request('http://x', { method: 'POST', body: form });
    const boundary = multipartBoundary(request.headers.get('content-type') ?? '');
    expect(boundary).toBeTruthy();
    const body = Buffer.from(await request.arrayBuffer());
    for (const size of [1, 7, 64, 4096, body.length]) {
      const parsed = await parts(body, boundary!, size);
      expect(parsed.map((part) => [part.name, part.filename])).toEqual([
        ['file', '/tmp/a "quoted"\nname.bin'],
        ['file', 'relative/ünïcode.txt'],
        ['note', undefined],
      ]);
      expect(parsed[0]!.content.equals(binary)).toBe(true);
      expect(parsed[1]!.content.toString()).toBe('second\r\n--not-a-boundary');
    }
  });

  it('rejects a body cut short', async () => {
    const body = Buffer.from('--b\r\nContent-Disposition: form-data; name="file"; filename="x"\r\n\r\nabc');
    await expect(parts(body, 'b', 5)).rejects.toBeInstanceOf(MultipartError);
  });

  it('finds the boundary of a content type, quoted or not', () => {
    expect(multipartBoundary('multipart/form-data; boundary=abc')).toBe('abc');
    expect(multipartBoundary('multipart/form-data; charset=utf-8; boundary="a b"')).toBe('a b');
    expect(multipartBoundary('application/octet-stream')).toBeUndefined();
  });
});
