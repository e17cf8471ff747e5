import type { IncomingMessage, ServerResponse } from 'node:http';
import type Docker from 'dockerode';
import { isRecord, readJson, sendJson, stringMap as stringMapOf } from '../http/http-util.js';
import { DaytonaHttpError, UnimplementedRequest } from './errors.js';
import type { DaytonaLimits } from './limits.js';
import { networkLimits } from './network-limits.js';
import { checkPerSandbox, checkTotals } from './quotas.js';
import type { RateLimiter, ThrottlerName } from './rate-limits.js';
import type { SandboxRecord, SandboxRegistry } from './sandbox-registry.js';
import { DAYTONA_DEFAULT_USER } from './sandbox-user.js';
import type {
  SandboxBody,
  SandboxLabelsBody,
  SandboxListBody,
  SandboxListItemBody,
  ToolboxProxyUrlBody,
} from './sdk-types.js';

/** What the control plane needs from the emulator. */
export interface ControlPlaneContext {
  registry: SandboxRegistry;
  docker: Docker;
  /** Snapshot name → image; the first is the default snapshot. */
  snapshots: Readonly<Record<string, string>>;
  /** `http://127.0.0.1:P/toolbox`, every sandbox's `toolboxProxyUrl`. */
  toolboxUrl: string;
  /** The organization's quotas and rate limits. */
  limits: DaytonaLimits;
  rates: RateLimiter;
}

/** The organization every emulated sandbox belongs to. */
export const EMULATED_ORGANIZATION_ID = '00000000-0000-4000-8000-000000000000';
/** The daemon version the emulator reports. */
export const EMULATED_DAEMON_VERSION = '0.218.0';

const DEFAULT_LIST_LIMIT = 100;
const MAX_LIST_LIMIT = 200;
const INTERVALS = {
  autostop: 'autoStopInterval',
  autoarchive: 'autoArchiveInterval',
  autodelete: 'autoDeleteInterval',
  autopause: 'autoPauseInterval',
} as const;

type Handler = (
  context: ControlPlaneContext,
  request: IncomingMessage,
  match: string[],
  url: URL,
) => Promise<unknown>;

/** A control-plane route. */
interface Route {
  method: string;
  pattern: RegExp;
  handle: Handler;
  /** The throttler it counts against instead of every request's (`authenticated`). */
  scope?: Exclude<ThrottlerName, 'authenticated'>;
  /** The status of a success: Nest answers a POST 201 unless the route says otherwise. */
  status?: number;
}

const ROUTES: Route[] = [
  { method: 'POST', pattern: /^\/sandbox$/, handle: createSandbox, scope: 'sandbox-create' },
  { method: 'GET', pattern: /^\/sandbox$/, handle: listSandboxes },
  {
    method: 'GET',
    pattern: /^\/sandbox\/([^/]+)$/,
    handle: async (c, _q, [id]) => dto(c, c.registry.require(id!)),
  },
  {
    method: 'DELETE',
    pattern: /^\/sandbox\/([^/]+)$/,
    handle: async (c, _q, [id]) => dto(c, await c.registry.remove(id!)),
    scope: 'sandbox-lifecycle',
  },
  {
    method: 'POST',
    pattern: /^\/sandbox\/([^/]+)\/start$/,
    handle: startSandbox,
    scope: 'sandbox-lifecycle',
  },
  {
    method: 'POST',
    pattern: /^\/sandbox\/([^/]+)\/stop$/,
    handle: async (c, _q, [id], url) =>
      dto(c, await c.registry.stop(id!, url.searchParams.get('force') === 'true')),
    scope: 'sandbox-lifecycle',
  },
  {
    method: 'POST',
    pattern: /^\/sandbox\/([^/]+)\/archive$/,
    handle: async (c, _q, [id]) => dto(c, await c.registry.archive(id!)),
    scope: 'sandbox-lifecycle',
  },
  { method: 'PUT', pattern: /^\/sandbox\/([^/]+)\/labels$/, handle: replaceLabels },
  {
    method: 'POST',
    pattern: /^\/sandbox\/([^/]+)\/(autostop|autoarchive|autodelete|autopause)\/([^/]+)$/,
    handle: setAutoInterval,
    status: 201,
  },
  {
    method: 'POST',
    pattern: /^\/sandbox\/([^/]+)\/last-activity$/,
    handle: async (c, _q, [id]) => {
      c.registry.touch(c.registry.require(id!));
      return undefined;
    },
    status: 201,
  },
  {
    method: 'GET',
    pattern: /^\/sandbox\/([^/]+)\/toolbox-proxy-url$/,
    handle: async (c, _q, [id]) => {
      c.registry.require(id!);
      const body: ToolboxProxyUrlBody = { url: c.toolboxUrl };
      return body;
    },
  },
];

/**
 * Serves one control-plane request; `path` is the part after `/api`. A request of a known route counts
 * against the rate limits first (as the API's guards run before its handlers); one of no route is
 * thrown as an {@link UnimplementedRequest}.
 */
export async function handleControlPlane(
  context: ControlPlaneContext,
  request: IncomingMessage,
  response: ServerResponse,
  path: string,
): Promise<void> {
  const url = new URL(request.url ?? '/', 'http://emulator');
  let pathMatched = false;
  for (const route of ROUTES) {
    const match = route.pattern.exec(path);
    if (!match) continue;
    pathMatched = true;
    if (route.method !== request.method) continue;
    let parameters: string[];
    try {
      parameters = match.slice(1).map((part) => decodeURIComponent(part));
    } catch {
      throw new DaytonaHttpError(400, 'malformed path parameter');
    }
    // Creating and lifecycle routes skip the `authenticated` throttler for their own.
    context.rates.hit(route.scope ?? 'authenticated', response);
    const body = await route.handle(context, request, parameters, url);
    const status = route.status ?? 200;
    if (body === undefined) {
      response.writeHead(status, { 'content-length': '0' });
      response.end();
    } else sendJson(response, status, body);
    return;
  }
  request.resume();
  if (pathMatched) throw new UnimplementedRequest(405, `${request.method} is not allowed on ${path}`);
  throw new UnimplementedRequest(
    404,
    `Cannot ${request.method} /api${path} (not part of the emulated Daytona API)`,
  );
}

/** The `Sandbox` DTO. */
export function dto(context: ControlPlaneContext, record: SandboxRecord): SandboxBody {
  return { ...listItem(context, record), env: { ...record.env }, volumes: [] };
}

/** A sandbox as a listing shows it (`SandboxListItem`: no `env`, no volumes). */
function listItem(context: ControlPlaneContext, record: SandboxRecord): SandboxListItemBody {
  const { settings } = record;
  return {
    id: record.id,
    organizationId: EMULATED_ORGANIZATION_ID,
    name: record.name,
    snapshot: record.snapshot,
    user: record.user,
    labels: { ...settings.labels },
    public: false,
    networkBlockAll: record.networkBlockAll,
    ...(record.networkAllowList ? { networkAllowList: record.networkAllowList } : {}),
    ...(record.domainAllowList ? { domainAllowList: record.domainAllowList } : {}),
    target: record.target,
    cpu: record.cpu,
    gpu: 0,
    memory: record.memory,
    disk: record.disk,
    state: record.state,
    desiredState: record.desiredState,
    ...(record.errorReason ? { errorReason: record.errorReason } : {}),
    recoverable: false,
    backupState: 'None',
    autoStopInterval: settings.autoStopInterval,
    autoArchiveInterval: settings.autoArchiveInterval,
    autoDeleteInterval: settings.autoDeleteInterval,
    autoPauseInterval: settings.autoPauseInterval,
    createdAt: record.createdAt.toISOString(),
    updatedAt: settings.updatedAt,
    lastActivityAt: settings.lastActivityAt,
    daemonVersion: EMULATED_DAEMON_VERSION,
    toolboxProxyUrl: context.toolboxUrl,
  };
}

async function bodyObject(request: IncomingMessage): Promise<Record<string, unknown>> {
  let body: unknown;
  try {
    body = await readJson(request);
  } catch (error) {
    throw new DaytonaHttpError(400, (error as Error).message);
  }
  if (body === undefined) return {};
  if (!isRecord(body)) throw new DaytonaHttpError(400, 'request body must be a JSON object');
  return body;
}

function stringMap(value: unknown, field: string): Record<string, string> {
  return stringMapOf(value, field, (reason) => new DaytonaHttpError(400, reason));
}

function integer(value: unknown, field: string, fallback: number, minimum: number): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < minimum)
    throw new DaytonaHttpError(400, `${field} must be an integer of at least ${minimum}`);
  return value;
}

async function imageExists(docker: Docker, image: string): Promise<boolean> {
  return docker
    .getImage(image)
    .inspect()
    .then(
      () => true,
      () => false,
    );
}

/** The snapshot name and image of a create request (`snapshot`, or `buildInfo` of `Image.base(…)`). */
async function resolveImage(
  context: ControlPlaneContext,
  body: Record<string, unknown>,
): Promise<{ snapshot: string; image: string }> {
  if (body.buildInfo !== undefined && body.buildInfo !== null) {
    const dockerfile = isRecord(body.buildInfo) ? body.buildInfo.dockerfileContent : undefined;
    const base = typeof dockerfile === 'string' ? /^\s*FROM\s+(\S+)\s*$/i.exec(dockerfile)?.[1] : undefined;
    if (!base)
      throw new DaytonaHttpError(400, 'the emulator builds no images: only Image.base(<image>) is supported');
    if (!(await imageExists(context.docker, base)))
      throw new DaytonaHttpError(
        400,
        `image ${base} is not in the local Docker engine (the emulator pulls nothing)`,
      );
    return { snapshot: base, image: base };
  }
  const names = Object.keys(context.snapshots);
  const snapshot = typeof body.snapshot === 'string' && body.snapshot !== '' ? body.snapshot : names[0];
  if (snapshot === undefined)
    throw new DaytonaHttpError(400, 'no snapshot given and the emulator has no default');
  const mapped = context.snapshots[snapshot];
  const image = mapped ?? snapshot;
  if (!(await imageExists(context.docker, image))) {
    throw new DaytonaHttpError(
      mapped ? 400 : 404,
      mapped
        ? `Snapshot ${snapshot} maps to the image ${mapped}, which the Docker engine does not have`
        : `Snapshot ${snapshot} not found. Did you add it through the Daytona Dashboard?`,
    );
  }
  return { snapshot, image };
}

/** 0 asks for the longest auto-archive interval; a longer one is cut to it (as the API does). */
function autoArchiveMinutes(context: ControlPlaneContext, minutes: number): number {
  const longest = context.limits.autoArchiveMaxMinutes;
  return minutes === 0 ? longest : Math.min(minutes, longest);
}

async function createSandbox(context: ControlPlaneContext, request: IncomingMessage): Promise<SandboxBody> {
  const body = await bodyObject(request);
  if (Array.isArray(body.volumes) && body.volumes.length > 0)
    throw new DaytonaHttpError(400, 'volumes are not supported by the emulator');
  if (body.name !== undefined && body.name !== null && (typeof body.name !== 'string' || body.name === ''))
    throw new DaytonaHttpError(400, 'name must be a non-empty string');
  if (body.user !== undefined && body.user !== null && typeof body.user !== 'string')
    throw new DaytonaHttpError(400, 'user must be a string');
  const labels = stringMap(body.labels, 'labels');
  const env = stringMap(body.env, 'env');
  const input = {
    name: typeof body.name === 'string' ? body.name : undefined,
    user: typeof body.user === 'string' && body.user !== '' ? body.user : DAYTONA_DEFAULT_USER,
    target: typeof body.target === 'string' && body.target !== '' ? body.target : 'us',
    cpu: integer(body.cpu, 'cpu', 1, 1),
    memory: integer(body.memory, 'memory', 1, 1),
    disk: integer(body.disk, 'disk', 3, 1),
    autoStopInterval: integer(body.autoStopInterval, 'autoStopInterval', 15, 0),
    autoArchiveInterval: autoArchiveMinutes(
      context,
      integer(body.autoArchiveInterval, 'autoArchiveInterval', 10080, 0),
    ),
    autoDeleteInterval: integer(body.autoDeleteInterval, 'autoDeleteInterval', -1, -1),
    networkBlockAll: body.networkBlockAll === true,
    ...networkLimits(body),
    labels,
    env,
  };
  checkPerSandbox(context.limits, input);
  checkTotals(context.limits, context.registry.list(), input);
  const { snapshot, image } = await resolveImage(context, body);
  return dto(context, await context.registry.create({ ...input, snapshot, image }));
}

/** Starts a stopped or archived sandbox once the organization's totals have room for it again. */
async function startSandbox(
  context: ControlPlaneContext,
  _request: IncomingMessage,
  [id]: string[],
): Promise<SandboxBody> {
  const record = context.registry.require(id!);
  if (record.state === 'stopped' || record.state === 'archived')
    checkTotals(context.limits, context.registry.list(), record, record.id);
  return dto(context, await context.registry.start(record.id));
}

function parseLabelsFilter(raw: string | null): Record<string, string> {
  if (raw === null || raw === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new DaytonaHttpError(400, 'Invalid labels JSON format');
  }
  return stringMap(parsed, 'labels');
}

function cursorOf(record: SandboxRecord): string {
  return Buffer.from(JSON.stringify([record.createdAt.getTime(), record.id])).toString('base64url');
}

function decodeCursor(text: string): [number, string] {
  try {
    const [time, id] = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown[];
    if (typeof time === 'number' && typeof id === 'string') return [time, id];
  } catch {
    // reported below
  }
  throw new DaytonaHttpError(400, 'invalid cursor');
}

async function listSandboxes(
  context: ControlPlaneContext,
  _request: IncomingMessage,
  _match: string[],
  url: URL,
): Promise<SandboxListBody> {
  const query = url.searchParams;
  const labels = parseLabelsFilter(query.get('labels'));
  const states = new Set(
    query
      .getAll('states')
      .flatMap((value) => value.split(','))
      .filter((value) => value !== ''),
  );
  const limitText = query.get('limit');
  const limit = limitText === null ? DEFAULT_LIST_LIMIT : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT)
    throw new DaytonaHttpError(400, `limit must be an integer from 1 to ${MAX_LIST_LIMIT}`);
  const order = query.get('order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw new DaytonaHttpError(400, 'order must be asc or desc');
  const id = query.get('id');
  const name = query.get('name');
  const snapshots = new Set(query.getAll('snapshots').flatMap((value) => value.split(',')));
  const cursorText = query.get('cursor');
  const cursor = cursorText ? decodeCursor(cursorText) : undefined;
  const direction = order === 'asc' ? 1 : -1;
  const key = (record: SandboxRecord): [number, string] => [record.createdAt.getTime(), record.id];
  const compare = (a: [number, string], b: [number, string]) =>
    direction * (a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  // A sandbox that failed on its way out is left out unless asked for.
  const erroredDeleted = query.get('includeErroredDeleted') === 'true';
  const matching = context.registry
    .list()
    .filter((record) => states.size === 0 || states.has(record.state))
    .filter((record) => erroredDeleted || record.state !== 'error' || record.desiredState !== 'destroyed')
    .filter((record) =>
      Object.entries(labels).every(([label, value]) => record.settings.labels[label] === value),
    )
    .filter((record) => !id || record.id.startsWith(id))
    .filter((record) => !name || record.name.startsWith(name))
    .filter((record) => snapshots.size === 0 || snapshots.has(record.snapshot))
    .sort((a, b) => compare(key(a), key(b)));
  const remaining = cursor ? matching.filter((record) => compare(key(record), cursor) > 0) : matching;
  const page = remaining.slice(0, limit);
  const last = page[page.length - 1];
  return {
    items: page.map((record) => listItem(context, record)),
    nextCursor: remaining.length > limit && last ? cursorOf(last) : null,
  };
}

async function replaceLabels(
  context: ControlPlaneContext,
  request: IncomingMessage,
  [id]: string[],
): Promise<SandboxLabelsBody> {
  const body = await bodyObject(request);
  const labels = stringMap(body.labels, 'labels');
  const record = await context.registry.update(id!, (settings) => {
    settings.labels = labels;
  });
  return { labels: { ...record.settings.labels } };
}

async function setAutoInterval(
  context: ControlPlaneContext,
  _request: IncomingMessage,
  [id, kind, value]: string[],
): Promise<SandboxBody> {
  const field = INTERVALS[kind as keyof typeof INTERVALS];
  const minutes = Number(value);
  const minimum = field === 'autoDeleteInterval' ? -1 : 0;
  if (!Number.isInteger(minutes) || minutes < minimum)
    throw new DaytonaHttpError(400, `${kind} interval must be an integer of at least ${minimum}`);
  const record = await context.registry.update(id!, (settings) => {
    settings[field] = field === 'autoArchiveInterval' ? autoArchiveMinutes(context, minutes) : minutes;
  });
  return dto(context, record);
}
