import { posix } from 'node:path';
import { collectAtMost } from '../../backend/streams.js';
import { isWsError, throwIfAborted } from '../../contracts/errors.js';
import type { CompleteSandbox, FileStat } from '../../contracts/sandbox.js';
import type { Tool, ToolCallOptions, ToolResult } from '../../contracts/tool.js';
import {
  checkInput,
  contentResult,
  errorResult,
  failureResult,
  type ToolEnvironment,
  textResult,
} from './common.js';
import {
  PDF_MAX_PAGES_PER_READ,
  PDF_MAX_PAGES_WITHOUT_RANGE,
  pdfPageCount,
  pdfPageTexts,
  pdfSlice,
} from './pdf.js';
import { decodeLenient, looksBinary, normalizeNewlines, sha256Hex } from './text.js';

/** Most lines one Read returns. */
export const READ_MAX_LINES = 2_000;
/** Lines longer than this many characters are cut and marked `[truncated]`. */
export const READ_MAX_LINE_CHARS = 2_000;
/**
 * Files up to this size are read whole (and remembered for Edit and Write); larger ones are streamed
 * line by line, and Edit and Write refuse them.
 */
export const MAX_EDITABLE_FILE_BYTES = 64 * 1024 * 1024;
/** Largest image Read returns as image content. */
export const READ_MAX_IMAGE_BYTES = 20 * 1024 * 1024;
/** The largest PDF Read opens. */
export const READ_MAX_PDF_BYTES = 64 * 1024 * 1024;
/** What a model accepts by default: the four common image types. */
export const DEFAULT_MODEL_INPUT_TYPES: readonly string[] = [
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
];

const IMAGE_TYPES: Readonly<Record<string, string>> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.bmp': 'image/bmp',
  '.tiff': 'image/tiff',
  '.tif': 'image/tiff',
  '.ico': 'image/vnd.microsoft.icon',
};

export interface ReadInput {
  file_path: string;
  offset?: number;
  limit?: number;
  pages?: string;
}

/** True when `mediaType` matches one of `accepted` (exact, or a `type/*` wildcard). */
export function acceptsMediaType(accepted: readonly string[], mediaType: string): boolean {
  return accepted.some(
    (pattern) =>
      pattern === mediaType || (pattern.endsWith('/*') && mediaType.startsWith(pattern.slice(0, -1))),
  );
}

function describe(environment: ToolEnvironment): string {
  const lines = [
    'Reads a file from the workspace.',
    '',
    '- `file_path` must be an absolute path.',
    `- Returns up to ${READ_MAX_LINES} lines from the start of the file, or \`limit\` lines from line \`offset\` (1-based) for long files.`,
    `- Lines are numbered as in \`cat -n\` (line number, then a tab, then the line); lines longer than ${READ_MAX_LINE_CHARS} characters are cut and marked [truncated].`,
    '- Read a file before editing or overwriting it with Edit or Write.',
  ];
  const images = environment.modelInputTypes.filter((type) => type.startsWith('image/'));
  if (images.length > 0) lines.push(`- Images (${images.join(', ')}) are returned as images you can see.`);
  if (acceptsMediaType(environment.modelInputTypes, 'application/pdf')) {
    lines.push(
      `- PDFs are returned as documents; one with more than ${PDF_MAX_PAGES_WITHOUT_RANGE} pages needs \`pages\` (such as "1-5"), at most ${PDF_MAX_PAGES_PER_READ} pages per call.`,
    );
  } else {
    lines.push(
      `- PDFs are returned as text, page by page; one with more than ${PDF_MAX_PAGES_WITHOUT_RANGE} pages needs \`pages\` (such as "1-5"), at most ${PDF_MAX_PAGES_PER_READ} pages per call.`,
    );
  }
  lines.push('- Reading a directory fails; use Bash with `ls` or Glob to list one.');
  return lines.join('\n');
}

/** The `Read` tool: numbered lines of text files, images, and PDFs, read through the sandbox. */
export function createReadTool(environment: ToolEnvironment): Tool<ReadInput> {
  const inputSchema = {
    type: 'object',
    properties: {
      file_path: { type: 'string', description: 'Absolute path of the file to read.' },
      offset: { type: 'integer', description: 'Line to start from (1-based).', default: 1, minimum: 1 },
      limit: {
        type: 'integer',
        description: `How many lines to read (at most ${READ_MAX_LINES}).`,
        default: READ_MAX_LINES,
        minimum: 1,
        maximum: READ_MAX_LINES,
      },
      pages: { type: 'string', description: 'PDF pages to read, such as "3" or "1-5".' },
    },
    required: ['file_path'],
    additionalProperties: false,
  } as const;
  return {
    name: 'Read',
    description: describe(environment),
    inputSchema,
    annotations: { readOnlyHint: true, concurrencySafe: true, title: 'Read a file' },
    async call(input: ReadInput, options: ToolCallOptions = {}): Promise<ToolResult> {
      throwIfAborted(options.signal);
      const invalid = checkInput(inputSchema, input);
      if (invalid) return errorResult(invalid);
      const path = input.file_path;
      if (!posix.isAbsolute(path))
        return errorResult(`Error: file_path must be an absolute path, got: ${path}`);
      try {
        const sandbox = environment.sandbox();
        let info: FileStat;
        try {
          info = await sandbox.stat(path, signalOf(options));
        } catch (error) {
          if (isWsError(error, 'NOT_FOUND') || isWsError(error, 'NOT_A_DIRECTORY'))
            return errorResult(`Error: File does not exist: ${path}`);
          throw error;
        }
        if (info.type === 'directory') return errorResult(`Error: Path is a directory, not a file: ${path}`);
        // A FIFO or a device has no end (its size says 0): reading it would never stop.
        if (info.type !== 'file')
          return errorResult(
            `Error: ${path} is not a regular file (a FIFO, device or socket); Read shows files.`,
          );
        const extension = posix.extname(path).toLowerCase();
        if (extension === '.pdf') return await readPdf(environment, sandbox, path, input.pages, options);
        const imageType = IMAGE_TYPES[extension];
        if (imageType) return await readImage(environment, sandbox, path, imageType, info, options);
        const offset = input.offset ?? 1;
        const limit = input.limit ?? READ_MAX_LINES;
        if (info.size > MAX_EDITABLE_FILE_BYTES)
          return await readLargeText(sandbox, path, offset, limit, options);
        const bytes = await readAtMost(sandbox, path, MAX_EDITABLE_FILE_BYTES, options);
        // It grew past the limit while it was read: read it as the large file it now is.
        if (!bytes) return await readLargeText(sandbox, path, offset, limit, options);
        if (looksBinary(bytes)) {
          return errorResult(
            `Error: ${path} is a binary file (${bytes.byteLength} bytes); Read shows text files, images and PDFs.`,
          );
        }
        environment.readCache.remember(path, { hash: sha256Hex(bytes), size: bytes.byteLength });
        const text = normalizeNewlines(decodeLenient(bytes));
        return formatLines(path, text, offset, limit);
      } catch (error) {
        return failureResult(error, `Error: reading ${path} failed: `);
      }
    },
  };
}

function signalOf(options: ToolCallOptions): { signal?: AbortSignal } {
  return options.signal ? { signal: options.signal } : {};
}

/**
 * The whole file, or undefined as soon as more than `maxBytes` came (a file growing while it is
 * read, as one an agent keeps appending to).
 */
async function readAtMost(
  sandbox: CompleteSandbox,
  path: string,
  maxBytes: number,
  options: ToolCallOptions,
): Promise<Uint8Array | undefined> {
  return collectAtMost(await sandbox.readStream(path, signalOf(options)), maxBytes);
}

function formatLine(number: number, line: string): string {
  const shown = line.length > READ_MAX_LINE_CHARS ? `${line.slice(0, READ_MAX_LINE_CHARS)}[truncated]` : line;
  return `${String(number).padStart(6)}\t${shown}`;
}

function formatLines(path: string, text: string, offset: number, limit: number): ToolResult {
  if (text.length === 0) return textResult(`The file ${path} is empty.`, { file_path: path, totalLines: 0 });
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  if (offset > lines.length) {
    return textResult(`The file ${path} has ${lines.length} lines; offset ${offset} is past its end.`, {
      file_path: path,
      totalLines: lines.length,
    });
  }
  const selected = lines.slice(offset - 1, offset - 1 + limit);
  const body = selected.map((line, index) => formatLine(offset + index, line)).join('\n');
  return textResult(body, {
    file_path: path,
    totalLines: lines.length,
    startLine: offset,
    numLines: selected.length,
  });
}

async function readLargeText(
  sandbox: CompleteSandbox,
  path: string,
  offset: number,
  limit: number,
  options: ToolCallOptions,
): Promise<ToolResult> {
  const decoder = new TextDecoder('utf-8', { fatal: false });
  const selected: string[] = [];
  let lineNumber = 0;
  let partial = '';
  let previousEndedInCr = false;
  const take = (line: string): boolean => {
    lineNumber++;
    if (lineNumber >= offset) selected.push(formatLine(lineNumber, line));
    return selected.length >= limit;
  };
  const stream = await sandbox.readStream(path, signalOf(options));
  let done = false;
  for await (const chunk of stream) {
    let text = decoder.decode(chunk, { stream: true });
    if (previousEndedInCr && text.startsWith('\n')) text = text.slice(1);
    previousEndedInCr = text.endsWith('\r');
    const parts = normalizeNewlines(partial + text).split('\n');
    // A line is shown up to READ_MAX_LINE_CHARS: of one without an end in sight, keep no more.
    partial = (parts.pop() ?? '').slice(0, READ_MAX_LINE_CHARS + 1);
    for (const line of parts) {
      if (take(line)) {
        done = true;
        break;
      }
    }
    if (done) break;
  }
  if (!done && partial.length > 0) take(partial);
  if (selected.length === 0)
    return textResult(`The file ${path} has ${lineNumber} lines; offset ${offset} is past its end.`, {
      file_path: path,
    });
  return textResult(selected.join('\n'), { file_path: path, startLine: offset, numLines: selected.length });
}

async function readImage(
  environment: ToolEnvironment,
  sandbox: CompleteSandbox,
  path: string,
  mediaType: string,
  info: FileStat,
  options: ToolCallOptions,
): Promise<ToolResult> {
  if (!acceptsMediaType(environment.modelInputTypes, mediaType)) {
    return errorResult(
      `Error: Unsupported image type ${mediaType} for ${path}; the model accepts ${environment.modelInputTypes.join(', ') || 'no images'}.`,
    );
  }
  if (info.size > READ_MAX_IMAGE_BYTES) {
    return errorResult(
      `Error: The image ${path} is ${info.size} bytes, more than the ${READ_MAX_IMAGE_BYTES} bytes Read returns.`,
    );
  }
  const bytes = await readAtMost(sandbox, path, READ_MAX_IMAGE_BYTES, options);
  if (!bytes)
    return errorResult(
      `Error: The image ${path} grew past the ${READ_MAX_IMAGE_BYTES} bytes Read returns while it was read.`,
    );
  return contentResult(
    [{ type: 'image', data: Buffer.from(bytes).toString('base64'), mimeType: mediaType }],
    {
      file_path: path,
      name: posix.basename(path),
      size: bytes.byteLength,
    },
  );
}

const PAGE_RANGE = /^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$/;

async function readPdf(
  environment: ToolEnvironment,
  sandbox: CompleteSandbox,
  path: string,
  pages: string | undefined,
  options: ToolCallOptions,
): Promise<ToolResult> {
  const data = await readAtMost(sandbox, path, READ_MAX_PDF_BYTES, options);
  if (!data)
    return errorResult(`Error: ${path} is larger than the ${READ_MAX_PDF_BYTES} bytes Read takes of a PDF.`);
  let total: number;
  try {
    total = await pdfPageCount(data);
  } catch (error) {
    return errorResult(`Error: ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  let first = 1;
  let last = total;
  if (pages === undefined || pages.trim() === '') {
    if (total > PDF_MAX_PAGES_WITHOUT_RANGE) {
      return errorResult(
        `Error: ${path} has ${total} pages, more than ${PDF_MAX_PAGES_WITHOUT_RANGE}. Pass \`pages\` (such as "1-5") to read part of it, at most ${PDF_MAX_PAGES_PER_READ} pages per call.`,
      );
    }
  } else {
    const match = PAGE_RANGE.exec(pages);
    if (!match)
      return errorResult(
        `Error: Invalid pages ${JSON.stringify(pages)}; use a page number such as "3" or a range such as "1-5".`,
      );
    first = Number(match[1]);
    last = match[2] === undefined ? first : Number(match[2]);
    if (first < 1) return errorResult(`Error: Invalid pages ${JSON.stringify(pages)}: pages start at 1.`);
    if (first > last)
      return errorResult(`Error: Invalid pages ${JSON.stringify(pages)}: the first page is after the last.`);
    if (first > total)
      return errorResult(`Error: Invalid pages ${JSON.stringify(pages)}: ${path} has ${total} pages.`);
    last = Math.min(last, total);
    if (last - first + 1 > PDF_MAX_PAGES_PER_READ) {
      return errorResult(
        `Error: Invalid pages ${JSON.stringify(pages)}: at most ${PDF_MAX_PAGES_PER_READ} pages per call.`,
      );
    }
  }
  const metadata = { file_path: path, totalPages: total, firstPage: first, lastPage: last };
  if (acceptsMediaType(environment.modelInputTypes, 'application/pdf')) {
    const slice = first === 1 && last === total ? data : await pdfSlice(data, first, last);
    return contentResult(
      [
        {
          type: 'resource',
          resource: {
            uri: `file://${encodeURI(path)}`,
            mimeType: 'application/pdf',
            blob: Buffer.from(slice).toString('base64'),
          },
        },
      ],
      metadata,
    );
  }
  const texts = await pdfPageTexts(data, first, last);
  return textResult(
    texts.map((text, index) => `--- Page ${first + index}/${total} ---\n${text}`).join('\n\n'),
    metadata,
  );
}
