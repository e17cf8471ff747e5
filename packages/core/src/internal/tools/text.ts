import { createHash } from 'node:crypto';

const lossless = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const lenient = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

/** Decodes UTF-8 exactly (a byte-order mark is kept as U+FEFF); undefined when the bytes are not UTF-8. */
export function decodeExact(bytes: Uint8Array): string | undefined {
  try {
    return lossless.decode(bytes);
  } catch {
    return undefined;
  }
}

/** Decodes UTF-8, replacing invalid sequences with U+FFFD. */
export function decodeLenient(bytes: Uint8Array): string {
  return lenient.decode(bytes);
}

/** CRLF and lone CR become LF. */
export function normalizeNewlines(text: string): string {
  return text.includes('\r') ? text.replace(/\r\n?/g, '\n') : text;
}

/** True when the bytes look binary: a NUL in the first 8 KiB, as git decides. */
export function looksBinary(bytes: Uint8Array): boolean {
  const end = Math.min(bytes.byteLength, 8192);
  for (let index = 0; index < end; index++) if (bytes[index] === 0) return true;
  return false;
}

/** SHA-256 of bytes, hex. */
export function sha256Hex(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Splits text into lines that keep their `\n` (the last line may lack one). */
export function splitLinesKeepEnds(text: string): string[] {
  if (text.length === 0) return [];
  const lines: string[] = [];
  let start = 0;
  for (;;) {
    const newline = text.indexOf('\n', start);
    if (newline === -1) {
      if (start < text.length) lines.push(text.slice(start));
      return lines;
    }
    lines.push(text.slice(start, newline + 1));
    start = newline + 1;
  }
}

/** Counts non-overlapping occurrences of `needle` (non-empty) in `haystack`, stopping at `limit`. */
export function countOccurrences(haystack: string, needle: string, limit = Number.POSITIVE_INFINITY): number {
  let count = 0;
  for (
    let index = haystack.indexOf(needle);
    index !== -1 && count < limit;
    index = haystack.indexOf(needle, index + needle.length)
  ) {
    count++;
  }
  return count;
}

/** Cuts text to `max` UTF-16 code units, never splitting a surrogate pair. */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return text.slice(0, end);
}
