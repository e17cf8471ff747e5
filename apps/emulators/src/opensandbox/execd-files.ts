import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isRecord, readJson, sendJson } from '../http/http-util.js';
import { MultipartError, multipartBoundary, parseMultipart } from '../http/multipart.js';
import { invalid, OpenSandboxHttpError } from './errors.js';
import { FileOps, modeText, ownership } from './file-ops.js';
import type { SandboxRecord } from './sandbox-registry.js';
import type { FilesInfoBody, ListDirectoryBody, ReplaceContentBody, SearchFilesBody } from './wire-types.js';

/** The request body as a JSON object or array (400 otherwise). */
export async function jsonBody(request: IncomingMessage): Promise<unknown> {
  let body: unknown;
  try {
    body = await readJson(request, 16 << 20);
  } catch (error) {
    throw new OpenSandboxHttpError(400, 'INVALID_REQUEST_BODY', (error as Error).message);
  }
  return body;
}

async function objectBody(request: IncomingMessage): Promise<Record<string, unknown>> {
  const body = await jsonBody(request);
  if (!isRecord(body))
    throw new OpenSandboxHttpError(400, 'INVALID_REQUEST_BODY', 'the body must be a JSON object');
  return body;
}

function paths(query: URLSearchParams): string[] {
  const all = query.getAll('path').filter((path) => path !== '');
  if (all.length === 0) throw invalid('missing query parameter path');
  return all;
}

function permissionOf(path: string, value: unknown): { mode: string | undefined; owner: string } {
  if (!isRecord(value)) throw invalid(`${path}: expected {mode, owner?, group?}`);
  return { mode: modeText(value.mode), owner: ownership(value.owner, value.group) };
}

/** `Range: bytes=…` as a start and length within `size`; undefined when absent, 416 when unsatisfiable. */
function rangeOf(header: string | undefined, size: number): { start: number; length: number } | undefined {
  if (!header) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === ''))
    throw new OpenSandboxHttpError(416, 'INVALID_RANGE', `unsupported range ${header}`);
  let start: number;
  let end: number;
  if (match[1] === '') {
    start = Math.max(0, size - Number(match[2]));
    end = size - 1;
  } else {
    start = Number(match[1]);
    end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  }
  if (start >= size || end < start)
    throw new OpenSandboxHttpError(416, 'INVALID_RANGE', `range ${header} is outside ${size} bytes`);
  return { start, length: end - start + 1 };
}

async function download(
  files: FileOps,
  request: IncomingMessage,
  response: ServerResponse,
  query: URLSearchParams,
): Promise<void> {
  const [path = ''] = paths(query);
  await files.checkReadable(path);
  const info = await files.info(path);
  const range = rangeOf(request.headers.range, info.size);
  const offset = Number(query.get('offset') ?? 0);
  const limit = query.get('limit') === null ? undefined : Number(query.get('limit'));
  if (
    !Number.isInteger(offset) ||
    offset < 0 ||
    (limit !== undefined && (!Number.isInteger(limit) || limit < 0))
  )
    throw invalid('offset and limit must be non-negative integers');
  const start = range?.start ?? offset;
  const length = range?.length ?? (limit === undefined ? Math.max(0, info.size - start) : limit);
  const { chunks } = await files.read(
    path,
    start,
    range || offset > 0 || limit !== undefined ? length : undefined,
  );
  const name = path.split('/').pop() || 'file';
  response.writeHead(range ? 206 : 200, {
    'content-type': 'application/octet-stream',
    'content-disposition': `attachment; filename*=UTF-8''${encodeURIComponent(name)}`,
    'accept-ranges': 'bytes',
    ...(range
      ? { 'content-range': `bytes ${range.start}-${range.start + range.length - 1}/${info.size}` }
      : {}),
  });
  for await (const chunk of chunks) {
    if (!response.write(chunk)) await new Promise((resolve) => response.once('drain', resolve));
    if (response.destroyed) return;
  }
  response.end();
}

/**
 * Reads the rest of a body too large to take, then refuses it with 413: answered only once the client
 * has sent it all, a client that writes its body before it reads the answer sees the 413 rather than
 * a broken connection.
 */
async function refuseTooLarge(request: IncomingMessage, limit: number): Promise<never> {
  request.resume();
  if (!request.readableEnded) await once(request, 'end').catch(() => {});
  throw new OpenSandboxHttpError(
    413,
    'REQUEST_ENTITY_TOO_LARGE',
    `the request body is larger than ${limit} bytes`,
  );
}

/** The body, cut off by {@link refuseTooLarge} past `limit` bytes (0: no limit). */
async function* bounded(request: IncomingMessage, limit: number): AsyncGenerator<Uint8Array> {
  let size = 0;
  for await (const chunk of request as AsyncIterable<Uint8Array>) {
    size += chunk.length;
    if (limit > 0 && size > limit) await refuseTooLarge(request, limit);
    yield chunk;
  }
}

/** `POST /files/upload`: pairs of a `metadata` part (JSON `{path, owner?, group?, mode?}`) and a `file` part. */
async function upload(files: FileOps, request: IncomingMessage, limit: number): Promise<void> {
  const boundary = multipartBoundary(request.headers['content-type']);
  if (!boundary) throw invalid('expected a multipart/form-data body');
  if (limit > 0 && Number(request.headers['content-length'] ?? 0) > limit)
    await refuseTooLarge(request, limit);
  let pending: { path: string; mode: string | undefined; owner: string } | undefined;
  let written = 0;
  try {
    for await (const part of parseMultipart(bounded(request, limit), boundary)) {
      if (part.name === 'metadata') {
        if (pending) throw invalid(`metadata for ${pending.path} has no file part`);
        const chunks: Buffer[] = [];
        let size = 0;
        for await (const chunk of part.body) {
          size += chunk.length;
          if (size > 1 << 16) throw invalid('metadata part too large');
          chunks.push(chunk);
        }
        let meta: unknown;
        try {
          meta = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          throw invalid('metadata is not valid JSON');
        }
        if (!isRecord(meta) || typeof meta.path !== 'string' || meta.path === '')
          throw invalid('metadata must be {path, owner?, group?, mode?}');
        pending = { path: meta.path, mode: modeText(meta.mode), owner: ownership(meta.owner, meta.group) };
      } else if (part.name === 'file') {
        if (!pending) throw invalid('a file part must follow its metadata part');
        await files.write(pending.path, part.body, {
          ...(pending.mode !== undefined ? { mode: pending.mode } : {}),
          owner: pending.owner,
        });
        pending = undefined;
        written++;
      }
    }
  } catch (error) {
    if (error instanceof MultipartError) throw invalid(error.message);
    throw error;
  }
  if (pending) throw invalid(`metadata for ${pending.path} has no file part`);
  if (written === 0) throw invalid('no files in the upload');
}

/** Replaces every `old` with `new` in each file; returns how many replacements each file got. */
async function replace(files: FileOps, body: Record<string, unknown>): Promise<ReplaceContentBody> {
  const result: ReplaceContentBody = {};
  for (const [path, item] of Object.entries(body)) {
    if (!isRecord(item) || typeof item.old !== 'string' || typeof item.new !== 'string')
      throw invalid(`${path}: expected {old, new} strings`);
    if (item.old === '') throw invalid(`${path}: old must not be empty`);
    const text = (await files.readAll(path)).toString('utf8');
    const parts = text.split(item.old);
    result[path] = { replacedCount: parts.length - 1 };
    if (parts.length > 1) await files.write(path, Buffer.from(parts.join(item.new)));
  }
  return result;
}

/** The file routes of execd; false when `path` is none of them. */
export async function handleFiles(
  record: SandboxRecord,
  request: IncomingMessage,
  response: ServerResponse,
  path: string,
  query: URLSearchParams,
  /** The largest upload body taken; 0: no limit. */
  uploadBytes: number,
): Promise<boolean> {
  const files = new FileOps(record.container);
  const route = `${request.method} ${path}`;
  const ok = () => sendJson(response, 200, {});
  switch (route) {
    case 'GET /files/info': {
      const out: FilesInfoBody = {};
      for (const item of paths(query)) out[item] = await files.info(item);
      sendJson(response, 200, out);
      return true;
    }
    case 'GET /files/download':
      await download(files, request, response, query);
      return true;
    case 'POST /files/upload':
      await upload(files, request, uploadBytes);
      ok();
      return true;
    case 'DELETE /files':
      for (const item of paths(query)) await files.deleteFile(item);
      ok();
      return true;
    case 'GET /directories/list': {
      const depth = query.get('depth') === null ? 1 : Number(query.get('depth'));
      if (!Number.isInteger(depth) || depth < 1) throw invalid('depth must be a positive integer');
      const [dir = ''] = paths(query);
      const listed: ListDirectoryBody = await files.list(dir, depth);
      sendJson(response, 200, listed);
      return true;
    }
    case 'POST /directories':
      for (const [dir, value] of Object.entries(await objectBody(request))) {
        const { mode, owner } = permissionOf(dir, value);
        await files.makeDir(dir, mode ?? '755', owner);
      }
      ok();
      return true;
    case 'DELETE /directories':
      for (const item of paths(query)) await files.deleteDir(item);
      ok();
      return true;
    case 'POST /files/permissions':
      for (const [item, value] of Object.entries(await objectBody(request))) {
        const { mode, owner } = permissionOf(item, value);
        await files.setPermissions(item, mode ?? '755', owner);
      }
      ok();
      return true;
    case 'POST /files/mv': {
      const body = await jsonBody(request);
      if (!Array.isArray(body)) throw invalid('expected [{src, dest}]');
      for (const item of body) {
        if (
          !isRecord(item) ||
          typeof item.src !== 'string' ||
          typeof item.dest !== 'string' ||
          !item.src ||
          !item.dest
        )
          throw invalid('each move needs src and dest');
        await files.move(item.src, item.dest);
      }
      ok();
      return true;
    }
    case 'POST /files/replace': {
      const result = await replace(files, await objectBody(request));
      sendJson(response, 200, query.get('verbose') === 'true' ? result : {});
      return true;
    }
    case 'GET /files/search': {
      const [dir = ''] = paths(query);
      const found: SearchFilesBody = await files.search(dir, query.get('pattern') || '*');
      sendJson(response, 200, found);
      return true;
    }
    default:
      return false;
  }
}
