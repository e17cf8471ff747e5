import type { IncomingMessage, ServerResponse } from 'node:http';
import type Docker from 'dockerode';
import {
  HttpError,
  isRecord,
  readJson,
  sendEmpty,
  sendError,
  sendJson,
  stringMap as stringMapOf,
} from '../http/http-util.js';
import type { UnimplementedLog } from '../http/unimplemented.js';
import { connectTimeoutSeconds, createTimeoutSeconds, integerSeconds, tooLarge } from './api-limits.js';
import { egressRules } from './egress.js';
import type { E2BLimits } from './limits.js';
import type { RateLimiter } from './rate-limit.js';
import type { SandboxRecord, SandboxRegistry } from './sandbox-registry.js';
import type { ErrorBody, ListedSandboxBody, SandboxBody, SandboxDetailBody } from './sdk-types.js';

/** What the REST control plane needs from the emulator. */
export interface ControlPlaneContext {
  registry: SandboxRegistry;
  docker: Docker;
  templates: Readonly<Record<string, string>>;
  /** Accepted `X-API-KEY` values; undefined accepts any non-empty key. */
  apiKeys: ReadonlySet<string> | undefined;
  envdVersion: string;
  resources: { cpuCount: number; memoryMB: number };
  /** The limits in force (the real defaults, or what the emulator was started with). */
  limits: Readonly<Record<keyof E2BLimits, number>>;
  /** `apiRequestsPer30s`, per API key. */
  rateLimiter: RateLimiter;
  /** Where requests the emulator does not implement are reported. */
  unimplemented: UnimplementedLog;
}

// Deprecated in E2B's API but still required in its schemas.
const CLIENT_ID = 'ws-emulator';
const DEFAULT_LIST_LIMIT = 100;
// The API spec's `maximum` of the `limit` parameter: its request validator answers 400 above it.
const MAX_LIST_LIMIT = 100;
const STATES = ['running', 'paused'] as const;

type Route = (
  context: ControlPlaneContext,
  request: IncomingMessage,
  response: ServerResponse,
  id: string,
) => Promise<void>;

const ROUTES: { method: string; pattern: RegExp; handle: Route }[] = [
  { method: 'POST', pattern: /^\/v2\/sandboxes$/, handle: (c, q, s) => createSandbox(c, q, s) },
  { method: 'GET', pattern: /^\/v2\/sandboxes$/, handle: (c, q, s) => listSandboxes(c, q, s) },
  { method: 'POST', pattern: /^\/v2\/sandboxes\/([^/]+)\/connect$/, handle: connectSandbox },
  { method: 'GET', pattern: /^\/sandboxes\/([^/]+)$/, handle: getSandbox },
  { method: 'DELETE', pattern: /^\/sandboxes\/([^/]+)$/, handle: killSandbox },
  { method: 'POST', pattern: /^\/sandboxes\/([^/]+)\/timeout$/, handle: setSandboxTimeout },
  { method: 'POST', pattern: /^\/sandboxes\/([^/]+)\/pause$/, handle: pauseSandbox },
];

/** Serves one control-plane request (`X-API-KEY` checked first). */
export async function handleControlPlane(
  context: ControlPlaneContext,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const key = request.headers['x-api-key'];
  const apiKey = Array.isArray(key) ? key[0] : key;
  if (!apiKey || (context.apiKeys !== undefined && !context.apiKeys.has(apiKey))) {
    sendError(response, 401, apiKey ? 'Invalid API key' : 'Missing X-API-KEY header');
    return;
  }
  const wait = context.rateLimiter.take(apiKey);
  if (wait !== undefined) {
    request.resume();
    // As the control plane's rate limiter: whole seconds, at least one.
    sendJson(response, 429, { code: 429, message: 'Rate limit exceeded' } satisfies ErrorBody, {
      'retry-after': String(Math.max(1, Math.ceil(wait / 1000))),
    });
    return;
  }
  const path = new URL(request.url ?? '/', 'http://emulator').pathname;
  let pathMatched = false;
  for (const route of ROUTES) {
    const match = route.pattern.exec(path);
    if (!match) continue;
    pathMatched = true;
    if (route.method !== request.method) continue;
    let id = '';
    try {
      id = decodeURIComponent(match[1] ?? '');
    } catch {
      throw new HttpError(400, 'malformed sandbox id');
    }
    try {
      await route.handle(context, request, response, id);
    } catch (error) {
      if (!(error instanceof HttpError) || error.status !== 413) throw error;
      request.resume();
      tooLarge(response);
    }
    return;
  }
  context.unimplemented.report(`${request.method} ${path}`);
  if (pathMatched) sendError(response, 405, `${request.method} is not allowed on ${path}`);
  else sendError(response, 404, `${path} is not part of the emulated E2B API`);
}

function stringMap(value: unknown, field: string): Record<string, string> {
  return stringMapOf(value, field, (reason) => new HttpError(400, reason));
}

function optionalBoolean(value: unknown, field: string): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw new HttpError(400, `${field} must be a boolean`);
  return value;
}

async function bodyObject(
  context: ControlPlaneContext,
  request: IncomingMessage,
): Promise<Record<string, unknown>> {
  const body = await readJson(request, context.limits.apiRequestBytes);
  if (body === undefined) return {};
  if (!isRecord(body)) throw new HttpError(400, 'request body must be a JSON object');
  return body;
}

async function resolveTemplate(
  context: ControlPlaneContext,
  templateId: string,
): Promise<{ image: string; alias?: string }> {
  const mapped = context.templates[templateId];
  const image = mapped ?? templateId;
  try {
    await context.docker.getImage(image).inspect();
  } catch {
    // A template the team cannot see is 404 for the API; a configured one without its image is the
    // emulator's own setup at fault.
    if (mapped)
      throw new HttpError(
        400,
        `template '${templateId}' maps to the image ${mapped}, which the Docker engine does not have`,
      );
    throw new HttpError(404, `template '${templateId}' not found`);
  }
  return mapped ? { image, alias: templateId } : { image };
}

function sandboxBody(context: ControlPlaneContext, record: SandboxRecord): SandboxBody {
  return {
    sandboxID: record.sandboxId,
    templateID: record.templateId,
    ...(record.alias ? { alias: record.alias } : {}),
    clientID: CLIENT_ID,
    envdVersion: context.envdVersion,
    envdAccessToken: record.envdAccessToken,
    domain: null,
    trafficAccessToken: null,
  };
}

function listedBody(context: ControlPlaneContext, record: SandboxRecord): ListedSandboxBody {
  return {
    sandboxID: record.sandboxId,
    templateID: record.templateId,
    ...(record.alias ? { alias: record.alias } : {}),
    clientID: CLIENT_ID,
    cpuCount: context.resources.cpuCount,
    memoryMB: context.resources.memoryMB,
    diskSizeMB: 0,
    startedAt: record.startedAt.toISOString(),
    endAt: record.endAt.toISOString(),
    state: record.state,
    envdVersion: context.envdVersion,
    metadata: { ...record.metadata },
    volumeMounts: [],
  };
}

function detailBody(context: ControlPlaneContext, record: SandboxRecord): SandboxDetailBody {
  return {
    ...listedBody(context, record),
    envdAccessToken: record.envdAccessToken,
    domain: null,
    allowInternetAccess: record.allowInternetAccess,
    ...(record.egress ? { network: { ...record.egress } } : {}),
    lifecycle: { onTimeout: record.autoPause ? 'pause' : 'kill', autoResume: record.autoResume },
  };
}

function notFound(sandboxId: string): HttpError {
  return new HttpError(
    404,
    `Sandbox ${JSON.stringify(sandboxId)} doesn't exist or you don't have access to it`,
  );
}

async function createSandbox(
  context: ControlPlaneContext,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const body = await bodyObject(context, request);
  const templateId = body.templateID;
  if (typeof templateId !== 'string' || templateId === '') throw new HttpError(400, 'templateID is required');
  const metadata = stringMap(body.metadata, 'metadata');
  const envVars = stringMap(body.envVars, 'envVars');
  const timeout = createTimeoutSeconds(context.limits, body.timeout);
  const autoPause = optionalBoolean(body.autoPause, 'autoPause') ?? false;
  const autoResume = isRecord(body.autoResume)
    ? (optionalBoolean(body.autoResume.enabled, 'autoResume.enabled') ?? false)
    : false;
  const allowInternetAccess = optionalBoolean(body.allow_internet_access, 'allow_internet_access') ?? null;
  const egress = egressRules(body.network);
  if (Array.isArray(body.volumeMounts) && body.volumeMounts.length > 0) {
    throw new HttpError(400, 'volume mounts are not supported by the emulator');
  }
  const template = await resolveTemplate(context, templateId);
  const record = await context.registry.create({
    templateId,
    image: template.image,
    alias: template.alias,
    metadata,
    envVars,
    timeoutSeconds: timeout,
    autoPause,
    autoResume,
    allowInternetAccess,
    egress,
    maxRunning: context.limits.sandboxes,
  });
  sendJson(response, 201, sandboxBody(context, record));
}

function parseMetadataFilter(raw: string | null): Record<string, string> {
  if (!raw) return {};
  // The SDK encodes each key and value, then URL-encodes the joined `k=v&k2=v2` once more; the query
  // parser undid that outer layer, URLSearchParams undoes the next, decodeURIComponent the last.
  const filter: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(raw)) {
    filter[safeDecode(key)] = safeDecode(value);
  }
  return filter;
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

interface Cursor {
  startedAt: number;
  sandboxId: string;
}

function encodeCursor(record: SandboxRecord): string {
  return Buffer.from(`${record.startedAt.getTime()}:${record.sandboxId}`).toString('base64url');
}

function decodeCursor(token: string): Cursor {
  const [time, sandboxId] = Buffer.from(token, 'base64url').toString('utf8').split(':');
  const startedAt = Number(time);
  if (!sandboxId || !Number.isFinite(startedAt)) throw new HttpError(400, 'invalid nextToken');
  return { startedAt, sandboxId };
}

async function listSandboxes(
  context: ControlPlaneContext,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const query = new URL(request.url ?? '/', 'http://emulator').searchParams;
  const metadata = parseMetadataFilter(query.get('metadata'));
  const states = query
    .getAll('state')
    .flatMap((value) => value.split(','))
    .filter((value) => value !== '');
  for (const state of states) {
    if (!(STATES as readonly string[]).includes(state)) throw new HttpError(400, `unknown state '${state}'`);
  }
  const wanted = new Set(states.length > 0 ? states : STATES);
  const limitText = query.get('limit');
  const limit = limitText === null ? DEFAULT_LIST_LIMIT : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw new HttpError(400, `limit must be an integer from 1 to ${MAX_LIST_LIMIT}`);
  }
  const order = query.get('order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw new HttpError(400, 'order must be asc or desc');
  const template = query.get('template');
  const startedAfterText = query.get('startedAfter');
  const startedAfter = startedAfterText ? new Date(startedAfterText) : undefined;
  if (startedAfter && Number.isNaN(startedAfter.getTime())) throw new HttpError(400, 'invalid startedAfter');
  const tokenText = query.get('nextToken');
  const cursor = tokenText ? decodeCursor(tokenText) : undefined;

  const direction = order === 'asc' ? 1 : -1;
  const compare = (a: Cursor, b: Cursor) =>
    direction *
    (a.startedAt - b.startedAt || (a.sandboxId < b.sandboxId ? -1 : a.sandboxId > b.sandboxId ? 1 : 0));
  const key = (record: SandboxRecord): Cursor => ({
    startedAt: record.startedAt.getTime(),
    sandboxId: record.sandboxId,
  });
  const matching = context.registry
    .list()
    .filter((record) => wanted.has(record.state))
    .filter((record) => Object.entries(metadata).every(([name, value]) => record.metadata[name] === value))
    .filter((record) => !template || record.templateId === template || record.alias === template)
    .filter((record) => !startedAfter || record.startedAt >= startedAfter)
    .sort((a, b) => compare(key(a), key(b)));
  const remaining = cursor ? matching.filter((record) => compare(key(record), cursor) > 0) : matching;
  const page = remaining.slice(0, limit);
  const headers: Record<string, string> = {};
  const last = page[page.length - 1];
  if (remaining.length > limit && last) headers['x-next-token'] = encodeCursor(last);
  if (wanted.has('running')) {
    headers['x-total-running'] = String(matching.filter((record) => record.state === 'running').length);
  }
  sendJson(
    response,
    200,
    page.map((record) => listedBody(context, record)),
    headers,
  );
}

async function getSandbox(
  context: ControlPlaneContext,
  _request: IncomingMessage,
  response: ServerResponse,
  sandboxId: string,
): Promise<void> {
  const record = context.registry.get(sandboxId);
  if (!record) throw notFound(sandboxId);
  sendJson(response, 200, detailBody(context, record));
}

async function killSandbox(
  context: ControlPlaneContext,
  _request: IncomingMessage,
  response: ServerResponse,
  sandboxId: string,
): Promise<void> {
  if (!(await context.registry.kill(sandboxId))) throw notFound(sandboxId);
  sendEmpty(response, 204);
}

async function setSandboxTimeout(
  context: ControlPlaneContext,
  request: IncomingMessage,
  response: ServerResponse,
  sandboxId: string,
): Promise<void> {
  const body = await bodyObject(context, request);
  if (body.timeout === undefined) throw new HttpError(400, 'Error when parsing request: timeout is required');
  // A negative timeout ends the sandbox now; a longer one than is left of its maximum length is cut.
  const timeout = Math.max(0, integerSeconds(body.timeout));
  const outcome = await context.registry.setTimeout(sandboxId, timeout, context.limits.timeoutMaxMs);
  if (outcome === 'missing') throw notFound(sandboxId);
  if (outcome === 'too-long') throw new HttpError(400, 'Max instance length exceeded');
  sendEmpty(response, 204);
}

async function pauseSandbox(
  context: ControlPlaneContext,
  request: IncomingMessage,
  response: ServerResponse,
  sandboxId: string,
): Promise<void> {
  await bodyObject(context, request);
  const outcome = await context.registry.pause(sandboxId);
  if (outcome === 'missing') throw notFound(sandboxId);
  if (outcome === 'conflict')
    throw new HttpError(409, `Error pausing sandbox - sandbox '${sandboxId}' is already paused`);
  sendEmpty(response, 204);
}

async function connectSandbox(
  context: ControlPlaneContext,
  request: IncomingMessage,
  response: ServerResponse,
  sandboxId: string,
): Promise<void> {
  const body = await bodyObject(context, request);
  const outcome = await context.registry.connect(
    sandboxId,
    connectTimeoutSeconds(context.limits, body.timeout),
    context.limits,
  );
  if (outcome === 'missing') throw notFound(sandboxId);
  if (outcome === 'too-long') throw new HttpError(400, 'Max instance length exceeded');
  sendJson(response, outcome.resumed ? 201 : 200, sandboxBody(context, outcome.record));
}
