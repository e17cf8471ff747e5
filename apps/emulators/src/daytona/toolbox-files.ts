import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { posix } from 'node:path';
import { MultipartError, multipartBoundary, parseMultipart } from '../http/multipart.js';
import { DaytonaHttpError, daemonErrorBody } from './errors.js';
import { FileOps } from './file-ops.js';
import type { SandboxRecord } from './sandbox-registry.js';
import type { ReplaceResultBody, SearchFilesBody } from './sdk-types.js';
import { bodyObject, type ToolboxResult } from './toolbox-process.js';

/** A toolbox path made absolute: relative paths start at the work dir (the user's home). */
export function sandboxPath(path: string | null | undefined, workDir: string, field = 'path'): string {
  if (path === null || path === undefined || path === '')
    throw new DaytonaHttpError(400, `${field} is required`);
  if (path.includes('\0')) throw new DaytonaHttpError(400, `${field} holds a NUL byte`);
  return posix.resolve(workDir, path);
}

/** Serves `/files…`; 'unmatched' when the path or method is none of its routes. */
export async function handleFilesRoute(
  record: SandboxRecord,
  request: IncomingMessage,
  response: ServerResponse,
  path: string,
  url: URL,
): Promise<ToolboxResult | 'unmatched' | 'sent'> {
  const files = new FileOps(record.container, record.account);
  const home = record.account.home;
  const query = url.searchParams;
  const at = (name = 'path') => sandboxPath(query.get(name), home, name);
  const route = `${request.method} ${path}`;
  switch (route) {
    case 'GET /files': {
      const depth = query.get('depth') === null ? 1 : Number(query.get('depth'));
      if (!Number.isInteger(depth) || depth < 1)
        throw new DaytonaHttpError(400, 'depth must be an integer of at least 1');
      return { body: await files.list(at(), depth) };
    }
    case 'GET /files/info':
      return { body: await files.info(at()) };
    case 'POST /files/folder': {
      const mode = query.get('mode') || '0755';
      if (!/^[0-7]{3,4}$/.test(mode)) throw new DaytonaHttpError(400, 'mode must be octal, like 0755');
      await files.makeDir(at(), mode);
      return undefined;
    }
    case 'DELETE /files':
      await files.remove(at(), query.get('recursive') === 'true');
      return undefined;
    case 'POST /files/move':
      await files.move(at('source'), at('destination'));
      return undefined;
    case 'POST /files/permissions': {
      const mode = query.get('mode') ?? '';
      if (mode !== '' && !/^[0-7]{3,4}$/.test(mode))
        throw new DaytonaHttpError(400, 'mode must be octal, like 0644');
      await files.setPermissions(at(), mode, query.get('owner') ?? '', query.get('group') ?? '');
      return undefined;
    }
    case 'GET /files/find':
      return { body: await files.find(at(), requiredText(query.get('pattern'), 'pattern')) };
    case 'GET /files/search': {
      const found: SearchFilesBody = {
        files: await files.search(at(), requiredText(query.get('pattern'), 'pattern')),
      };
      return { body: found };
    }
    case 'POST /files/replace':
      return { body: await replaceInFiles(files, request, home) };
    case 'POST /files/bulk-upload':
      return bulkUpload(files, request, home);
    case 'POST /files/bulk-download':
      await bulkDownload(files, request, response, home);
      return 'sent';
    case 'GET /files/download':
      await downloadOne(files, response, at());
      return 'sent';
    default:
      return 'unmatched';
  }
}

function requiredText(value: string | null, field: string): string {
  if (value === null || value === '') throw new DaytonaHttpError(400, `${field} is required`);
  return value;
}

/** `{files, pattern, newValue}`: every occurrence of the plain string, file by file, each written whole. */
async function replaceInFiles(
  files: FileOps,
  request: IncomingMessage,
  home: string,
): Promise<ReplaceResultBody[]> {
  const body = await bodyObject(request);
  const list = body.files;
  if (!Array.isArray(list) || list.some((item) => typeof item !== 'string'))
    throw new DaytonaHttpError(400, 'files must be an array of paths');
  if (typeof body.pattern !== 'string' || body.pattern === '')
    throw new DaytonaHttpError(400, 'pattern is required');
  if (typeof body.newValue !== 'string') throw new DaytonaHttpError(400, 'newValue must be a string');
  const pattern = Buffer.from(body.pattern);
  const replacement = Buffer.from(body.newValue);
  const results: ReplaceResultBody[] = [];
  for (const file of list as string[]) {
    try {
      const path = sandboxPath(file, home, 'file');
      await files.checkReadable(path);
      const { chunks, finished } = await files.read(path);
      const parts: Buffer[] = [];
      for await (const chunk of chunks) parts.push(chunk);
      const { exitCode, stderr } = await finished;
      if (exitCode !== 0)
        throw new DaytonaHttpError(400, stderr.toString('utf8').trim() || `cannot read ${path}`);
      const content = Buffer.concat(parts);
      const pieces: Buffer[] = [];
      let offset = 0;
      for (let index = content.indexOf(pattern); index >= 0; index = content.indexOf(pattern, offset)) {
        pieces.push(content.subarray(offset, index), replacement);
        offset = index + pattern.length;
      }
      if (offset > 0) {
        pieces.push(content.subarray(offset));
        await files.write(path, Buffer.concat(pieces));
      }
      results.push({ file, success: true });
    } catch (error) {
      results.push({ file, success: false, error: (error as Error).message });
    }
  }
  return results;
}

/** One written file of a bulk upload, as the daemon reports it. */
interface UploadedFile {
  path: string;
  bytes: number;
}

/** Counts the bytes of `source` as they pass. */
async function* counted(
  source: AsyncIterable<Uint8Array>,
  total: { bytes: number },
): AsyncIterable<Uint8Array> {
  for await (const chunk of source) {
    total.bytes += chunk.byteLength;
    yield chunk;
  }
}

/** The daemon's words for a file it could not write (Go's `open <path>: <reason>`). */
function uploadError(path: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const reason =
    error instanceof DaytonaHttpError && error.status === 403
      ? 'permission denied'
      : /is a directory/i.test(message)
        ? 'is a directory'
        : /not a directory/i.test(message)
          ? 'not a directory'
          : message;
  return `${path}: create: open ${path}: ${reason}`;
}

/**
 * Multipart parts `files[i].path` (text) and then `files[i].file` (bytes), as the daemon takes them:
 * each file is written on its own, and the answer lists those written (`{files: [{path, bytes}]}`), with
 * `errors` and status 400 when any part failed (a file without its path before it, one it could not
 * write); a body that is not multipart is 400 `{errors: ["invalid multipart form"]}`.
 */
async function bulkUpload(files: FileOps, request: IncomingMessage, home: string): Promise<ToolboxResult> {
  const boundary = multipartBoundary(request.headers['content-type']);
  if (!boundary) return { status: 400, body: { errors: ['invalid multipart form'] } };
  const paths = new Map<string, string>();
  const written: UploadedFile[] = [];
  const errors: string[] = [];
  try {
    for await (const part of parseMultipart(request, boundary)) {
      const match = /^files\[(\d+)\]\.(path|file)$/.exec(part.name ?? '');
      if (!match) continue;
      const [, index = '', kind] = match;
      if (kind === 'path') {
        const chunks: Buffer[] = [];
        for await (const chunk of part.body) chunks.push(chunk);
        const path = Buffer.concat(chunks).toString('utf8').trim();
        if (path === '') errors.push(`path[${index}]: empty path`);
        else paths.set(index, path);
        continue;
      }
      const target = paths.get(index);
      if (target === undefined) {
        errors.push(`file[${index}]: missing .path metadata`);
        for await (const _ of part.body); // skipped, read to its end
        continue;
      }
      const total = { bytes: 0 };
      try {
        await files.write(sandboxPath(target, home, `files[${index}].path`), counted(part.body, total));
        written.push({ path: target, bytes: total.bytes });
      } catch (error) {
        errors.push(uploadError(target, error));
      }
    }
  } catch (error) {
    if (!(error instanceof MultipartError)) throw error;
    errors.push(`reading part: ${error.message}`);
  }
  if (errors.length > 0) return { status: 400, body: { errors, files: written } };
  return { body: { files: written } };
}

/** RFC 5987 form of a file name, which carries quotes, newlines and any Unicode unharmed. */
function dispositionFilename(name: string): string {
  const encoded = encodeURIComponent(name).replace(
    /['()*]/g,
    (character) => `%${character.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `filename*=UTF-8''${encoded}`;
}

function write(response: ServerResponse, data: string | Buffer): Promise<void> {
  if (response.write(data)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      response.off('drain', done);
      response.off('close', done);
      resolve();
    };
    response.on('drain', done);
    response.on('close', done);
  });
}

/** `{paths}` → multipart/form-data: a `file` part per readable file, an `error` part (JSON) per other. */
async function bulkDownload(
  files: FileOps,
  request: IncomingMessage,
  response: ServerResponse,
  home: string,
): Promise<void> {
  const body = await bodyObject(request);
  const paths = body.paths;
  if (!Array.isArray(paths) || paths.length === 0 || paths.some((item) => typeof item !== 'string'))
    throw new DaytonaHttpError(400, 'paths must be a non-empty array of paths');
  const boundary = `ws-daytona-${randomBytes(12).toString('hex')}`;
  response.writeHead(200, { 'content-type': `multipart/form-data; boundary=${boundary}` });
  for (const source of paths as string[]) {
    if (response.destroyed) return;
    const head = (name: string, type: string) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${name}"; ${dispositionFilename(source)}\r\nContent-Type: ${type}\r\n\r\n`;
    let path: string;
    try {
      path = sandboxPath(source, home);
      await files.checkReadable(path);
    } catch (error) {
      const known =
        error instanceof DaytonaHttpError ? error : new DaytonaHttpError(500, (error as Error).message);
      await write(response, head('error', 'application/json'));
      await write(
        response,
        `${JSON.stringify(daemonErrorBody(known.status, known.message, known.code))}\r\n`,
      );
      continue;
    }
    await write(response, head('file', 'application/octet-stream'));
    const { chunks, finished } = await files.read(path);
    for await (const chunk of chunks) {
      if (response.destroyed) break;
      await write(response, chunk);
    }
    const { exitCode } = await finished;
    if (exitCode !== 0 || response.destroyed) {
      response.destroy(new Error(`reading ${path} failed`));
      return;
    }
    await write(response, '\r\n');
  }
  response.end(`--${boundary}--\r\n`);
}

/** `GET /files/download?path=`: the bytes of one file. */
async function downloadOne(files: FileOps, response: ServerResponse, path: string): Promise<void> {
  await files.checkReadable(path);
  const { chunks, finished } = await files.read(path);
  response.writeHead(200, {
    'content-type': 'application/octet-stream',
    'content-disposition': `attachment; ${dispositionFilename(posix.basename(path))}`,
  });
  for await (const chunk of chunks) {
    if (response.destroyed) return;
    await write(response, chunk);
  }
  if ((await finished).exitCode !== 0) response.destroy(new Error(`reading ${path} failed`));
  else response.end();
}
