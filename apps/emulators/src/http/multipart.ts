/** One part of a multipart/form-data body. Read `body` to its end before asking for the next part. */
export interface MultipartPart {
  /** Header names in lower case. */
  headers: Record<string, string>;
  /** The `name` of its Content-Disposition. */
  name: string | undefined;
  /** The `filename` (or `filename*`) of its Content-Disposition, decoded. */
  filename: string | undefined;
  body: AsyncIterable<Buffer>;
}

const MAX_HEADER_BYTES = 64 << 10;

/** The boundary of a `multipart/form-data; boundary=…` content type, or undefined. */
export function multipartBoundary(contentType: string | undefined): string | undefined {
  if (!contentType || !/^multipart\/form-data\b/i.test(contentType)) return undefined;
  const match = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  return match?.[1] ?? match?.[2];
}

/** Buffered reads over a byte stream: exact lengths, and everything up to a delimiter. */
class ByteReader {
  private buffer: Buffer = Buffer.alloc(0);
  private done = false;

  constructor(private readonly source: AsyncIterator<Uint8Array>) {}

  private async fill(): Promise<boolean> {
    if (this.done) return false;
    const next = await this.source.next();
    if (next.done) {
      this.done = true;
      return false;
    }
    const chunk = Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength);
    this.buffer = this.buffer.length > 0 ? Buffer.concat([this.buffer, chunk]) : chunk;
    return true;
  }

  async read(length: number): Promise<Buffer> {
    while (this.buffer.length < length) {
      if (!(await this.fill())) throw new MultipartError('the multipart body ends early');
    }
    const out = this.buffer.subarray(0, length);
    this.buffer = this.buffer.subarray(length);
    return out;
  }

  /** Yields the bytes before `delimiter` as they arrive, then consumes the delimiter. */
  async *until(delimiter: Buffer, limit = Number.POSITIVE_INFINITY): AsyncGenerator<Buffer> {
    let seen = 0;
    for (;;) {
      const index = this.buffer.indexOf(delimiter);
      if (index >= 0) {
        if (index > 0) yield this.buffer.subarray(0, index);
        this.buffer = this.buffer.subarray(index + delimiter.length);
        return;
      }
      // Keep what could be the start of a delimiter split across chunks.
      const safe = this.buffer.length - (delimiter.length - 1);
      if (safe > 0) {
        seen += safe;
        if (seen > limit) throw new MultipartError('a multipart header section is too large');
        const out = this.buffer.subarray(0, safe);
        this.buffer = this.buffer.subarray(safe);
        yield out;
      }
      if (!(await this.fill())) throw new MultipartError('the multipart body ends early');
    }
  }
}

/** A malformed multipart body. */
export class MultipartError extends Error {}

function parseHeaders(block: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of block.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return headers;
}

// FormData serialisers escape `"`, CR and LF in names as %22, %0D, %0A (the HTML spec's rule).
function unescapeQuoted(value: string): string {
  return value.replace(/\\(.)/g, '$1').replace(/%22|%0D|%0A/gi, (sequence) => {
    const code = sequence.toUpperCase();
    return code === '%22' ? '"' : code === '%0D' ? '\r' : '\n';
  });
}

function dispositionParameter(disposition: string, name: string): string | undefined {
  const extended = new RegExp(`;\\s*${name}\\*\\s*=\\s*([^']*)'[^']*'([^;]*)`, 'i').exec(disposition);
  if (extended?.[2] !== undefined) {
    try {
      return decodeURIComponent(extended[2].trim());
    } catch {
      return extended[2].trim();
    }
  }
  const quoted = new RegExp(`;\\s*${name}\\s*=\\s*"((?:[^"\\\\]|\\\\.)*)"`, 'i').exec(disposition);
  if (quoted?.[1] !== undefined) return unescapeQuoted(quoted[1]);
  const bare = new RegExp(`;\\s*${name}\\s*=\\s*([^;\\s]+)`, 'i').exec(disposition);
  return bare?.[1];
}

/** Streams the parts of a multipart/form-data body without holding any part in memory. */
export async function* parseMultipart(
  body: AsyncIterable<Uint8Array>,
  boundary: string,
): AsyncGenerator<MultipartPart> {
  const reader = new ByteReader(body[Symbol.asyncIterator]());
  const dashBoundary = Buffer.from(`--${boundary}`);
  const partEnd = Buffer.from(`\r\n--${boundary}`);
  for await (const _ of reader.until(dashBoundary)) {
    // the preamble is ignored
  }
  for (;;) {
    const after = (await reader.read(2)).toString('latin1');
    if (after === '--') return;
    if (after !== '\r\n') throw new MultipartError('malformed multipart boundary line');
    const headerChunks: Buffer[] = [];
    for await (const chunk of reader.until(Buffer.from('\r\n\r\n'), MAX_HEADER_BYTES))
      headerChunks.push(chunk);
    const headers = parseHeaders(Buffer.concat(headerChunks).toString('utf8'));
    const disposition = headers['content-disposition'] ?? '';
    let consumed = false;
    const content = reader.until(partEnd);
    const part: MultipartPart = {
      headers,
      name: dispositionParameter(disposition, 'name'),
      filename: dispositionParameter(disposition, 'filename'),
      body: {
        [Symbol.asyncIterator]: () => {
          if (consumed) throw new MultipartError('a multipart part body can be read once');
          consumed = true;
          return content;
        },
      },
    };
    yield part;
    // Whatever the consumer left unread is skipped.
    for await (const _ of content) {
      // draining
    }
  }
}
