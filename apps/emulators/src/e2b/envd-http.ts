import type { IncomingMessage, ServerResponse } from 'node:http';
import { posix } from 'node:path';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { HttpError, sendEmpty, sendError, sendJson } from '../http/http-util.js';
import { MultipartError, multipartBoundary, parseMultipart } from '../http/multipart.js';
import type { UnimplementedLog } from '../http/unimplemented.js';
import { resolveSandboxPath } from './accounts.js';
import { EnvdAccessError, type EnvdCaller, resolveEnvdCaller, SANDBOX_ID_HEADER } from './envd-access.js';
import { FileOperationError } from './file-ops.js';
import type { SandboxRegistry } from './sandbox-registry.js';

function headerSource(request: IncomingMessage): { get(name: string): string | undefined } {
  return {
    get: (name) => {
      const value = request.headers[name.toLowerCase()];
      return Array.isArray(value) ? value[0] : value;
    },
  };
}

/** Maps envd failures to the HTTP status and `{code, message}` body envd answers with. */
function toHttpError(error: unknown): HttpError | undefined {
  if (error instanceof HttpError) return error;
  if (error instanceof EnvdAccessError || error instanceof FileOperationError) {
    return new HttpError(error.httpStatus, error.rawMessage);
  }
  if (error instanceof MultipartError) return new HttpError(400, error.message);
  return undefined;
}

/**
 * Serves envd's plain HTTP endpoints (`/health`, `/files`); false when the path is not one of them
 * (then it is a Connect RPC).
 */
export async function handleEnvdHttp(
  registry: SandboxRegistry,
  request: IncomingMessage,
  response: ServerResponse,
  unimplemented: UnimplementedLog,
): Promise<boolean> {
  const url = new URL(request.url ?? '/', 'http://emulator');
  if (url.pathname === '/health') {
    await health(registry, request, response);
    return true;
  }
  if (url.pathname !== '/files') return false;
  try {
    const username = url.searchParams.get('username') || undefined;
    const caller = await resolveEnvdCaller(registry, headerSource(request), username);
    if (request.method === 'GET') await download(caller, url, response);
    else if (request.method === 'POST') await upload(caller, url, request, response);
    else {
      unimplemented.report(`${request.method} /files`);
      throw new HttpError(405, `${request.method} is not allowed on /files`);
    }
  } catch (error) {
    const known = toHttpError(error);
    if (!known) throw error;
    request.resume();
    sendError(response, known.status, known.message);
  }
  return true;
}

async function health(
  registry: SandboxRegistry,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const sandbox = registry.get(headerSource(request).get(SANDBOX_ID_HEADER) ?? '');
  if (sandbox?.state !== 'running') {
    sendError(response, 502, 'the sandbox is not running');
    return;
  }
  const state = await sandbox.container.inspect().then(
    (info) => info.State,
    () => undefined,
  );
  if (!state?.Running || state.Paused) sendError(response, 502, 'the sandbox is not running');
  else sendEmpty(response, 204);
}

async function download(caller: EnvdCaller, url: URL, response: ServerResponse): Promise<void> {
  const path = resolveSandboxPath(url.searchParams.get('path') ?? undefined, caller.account.home);
  const probe = await caller.files.probe(path, caller.account).catch((error: unknown) => {
    // envd's download says it in its own words (its RPCs say `file not found: …`).
    if (error instanceof FileOperationError && error.httpStatus === 404)
      throw new HttpError(404, `path '${path}' does not exist`);
    throw error;
  });
  if (probe.kind === 'directory') throw new HttpError(400, `path '${path}' is a directory`);
  if (probe.kind !== 'file') throw new HttpError(400, `path '${path}' is not a regular file`);
  const headers = {
    'content-type': 'application/octet-stream',
    'content-disposition': `attachment; filename*=UTF-8''${encodeURIComponent(posix.basename(path))}`,
  };
  if (probe.size === 0) {
    response.writeHead(200, { ...headers, 'content-length': '0' });
    response.end();
    return;
  }
  // No content-length: the file may change between the probe and the read, and a wrong length would
  // corrupt the response; chunked transfer carries whatever cat prints.
  const { chunks, finished } = await caller.files.read(path, caller.account);
  // A client that goes away destroys the response; leaving the loop early ends the exec (cat).
  for await (const chunk of chunks) {
    if (response.destroyed) break;
    if (!response.headersSent) response.writeHead(200, headers);
    if (!response.write(chunk)) await drained(response);
  }
  if (response.destroyed) return;
  const { exitCode, stderr } = await finished;
  if (exitCode !== 0) {
    if (response.headersSent) response.destroy(new Error(`reading ${path} failed`));
    else throw new HttpError(500, `error reading ${path}: ${stderr.toString('utf8').trim()}`);
    return;
  }
  if (!response.headersSent) response.writeHead(200, { ...headers, 'content-length': '0' });
  response.end();
}

/** Resolves when a response can take more, or is gone. */
function drained(response: ServerResponse): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      response.off('drain', done);
      response.off('close', done);
      resolve();
    };
    response.on('drain', done);
    response.on('close', done);
  });
}

function decoded(request: IncomingMessage): AsyncIterable<Uint8Array> {
  const encoding = (request.headers['content-encoding'] ?? '').toLowerCase();
  if (encoding === 'gzip') return request.pipe(createGunzip()) as Readable;
  if (encoding !== '' && encoding !== 'identity')
    throw new HttpError(400, `unsupported Content-Encoding ${encoding}`);
  return request;
}

async function upload(
  caller: EnvdCaller,
  url: URL,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const queryPath = url.searchParams.get('path') || undefined;
  // envd's `EntryInfo` of its REST spec (the SDK types its REST client with it, but exports neither).
  const written: { name: string; path: string; type: 'file' }[] = [];
  const boundary = multipartBoundary(request.headers['content-type']);
  const home = caller.account.home;
  if (boundary) {
    for await (const part of parseMultipart(decoded(request), boundary)) {
      if (part.name !== 'file') continue;
      const target = part.filename || queryPath;
      if (!target) throw new HttpError(400, 'a file part has no filename and the request no path');
      const path = resolveSandboxPath(target, home);
      await caller.files.write(path, part.body, caller.account);
      written.push({ name: posix.basename(path), path, type: 'file' });
    }
  } else {
    if (!queryPath) throw new HttpError(400, 'the path query parameter is required for a raw upload');
    const path = resolveSandboxPath(queryPath, home);
    await caller.files.write(path, decoded(request), caller.account);
    written.push({ name: posix.basename(path), path, type: 'file' });
  }
  if (written.length === 0) throw new HttpError(400, 'the request has no part named "file"');
  sendJson(response, 200, written);
}
