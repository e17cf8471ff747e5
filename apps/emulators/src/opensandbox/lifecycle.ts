import type { IncomingMessage, ServerResponse } from 'node:http';
import type Docker from 'dockerode';
import { isRecord, sendEmpty, sendJson, stringMap as stringMapOf } from '../http/http-util.js';
import { invalid, notFound, OpenSandboxHttpError } from './errors.js';
import { jsonBody } from './execd-files.js';
import type {
  CreateSandboxInput,
  SandboxNetworkPolicy,
  SandboxRecord,
  SandboxRegistry,
  SandboxState,
} from './sandbox-registry.js';

export interface LifecycleContext {
  registry: SandboxRegistry;
  docker: Docker;
  /** Image URI → local image. */
  images: Readonly<Record<string, string>>;
  /** `127.0.0.1:<port>`: the host part of every endpoint. */
  host: string;
}

/** The execd port the SDK asks the endpoint of; every other port goes through execd's `/proxy/{port}`. */
export const EXECD_PORT = 44772;
/** The header a `secureAccess` sandbox's execd requires, with the token its endpoint hands out. */
export const EXECD_ACCESS_TOKEN_HEADER = 'X-EXECD-ACCESS-TOKEN';
/** The egress sidecar's port (the SDK asks its endpoint too; the emulator has no egress sidecar). */
export const EGRESS_PORT = 18080;

const STATES: readonly SandboxState[] = [
  'Pending',
  'Running',
  'Pausing',
  'Paused',
  'Resuming',
  'Stopping',
  'Terminated',
  'Failed',
];

/** The lifecycle API's `Sandbox`. */
export function sandboxDto(record: SandboxRecord): Record<string, unknown> {
  return {
    id: record.id,
    image: { uri: record.image },
    status: {
      state: record.state,
      ...(record.reason !== undefined ? { reason: record.reason } : {}),
      ...(record.message !== undefined ? { message: record.message } : {}),
      lastTransitionAt: record.lastTransitionAt.toISOString(),
    },
    metadata: { ...record.settings.metadata },
    entrypoint: [...record.entrypoint],
    createdAt: record.createdAt.toISOString(),
    ...(record.settings.expiresAt !== null ? { expiresAt: record.settings.expiresAt } : {}),
  };
}

function stringMap(value: unknown, field: string): Record<string, string> {
  return stringMapOf(value, field, invalid);
}

/** Kubernetes quantities: CPU `1`, `500m`; memory `2Gi`, `512Mi`, `1G`, bytes. */
function quantity(value: unknown, field: string, kind: 'cpu' | 'memory'): number | undefined {
  if (value === undefined || value === null) return undefined;
  const match = /^(\d+(?:\.\d+)?)(m|Ki|Mi|Gi|Ti|k|K|M|G|T)?$/.exec(String(value).trim());
  if (!match) throw invalid(`${field} is not a valid quantity: ${String(value)}`);
  const number = Number(match[1]);
  const unit = match[2] ?? '';
  if (kind === 'cpu') {
    if (unit !== '' && unit !== 'm') throw invalid(`${field} is not a valid CPU quantity: ${String(value)}`);
    return Math.round((unit === 'm' ? number / 1000 : number) * 1e9);
  }
  const scale: Record<string, number> = {
    '': 1,
    k: 1e3,
    K: 1e3,
    M: 1e6,
    G: 1e9,
    T: 1e12,
    Ki: 2 ** 10,
    Mi: 2 ** 20,
    Gi: 2 ** 30,
    Ti: 2 ** 40,
  };
  if (unit === 'm' || scale[unit] === undefined) throw invalid(`${field} is not a valid memory quantity`);
  return Math.round(number * scale[unit]);
}

async function createInput(
  context: LifecycleContext,
  body: Record<string, unknown>,
): Promise<CreateSandboxInput> {
  if (body.snapshotId !== undefined && body.snapshotId !== null)
    throw invalid('the emulator cannot restore snapshots; give image.uri');
  const uri = isRecord(body.image) ? body.image.uri : undefined;
  if (typeof uri !== 'string' || uri === '') throw invalid('image.uri is required');
  for (const field of ['volumes', 'credentialProxy'] as const)
    if (body[field] !== undefined && body[field] !== null)
      throw invalid(`the emulator does not support ${field}`);
  const networkPolicy = networkPolicyOf(body.networkPolicy);
  const entrypoint = body.entrypoint ?? ['tail', '-f', '/dev/null'];
  if (
    !Array.isArray(entrypoint) ||
    entrypoint.length === 0 ||
    !entrypoint.every((item) => typeof item === 'string')
  )
    throw invalid('entrypoint must be a non-empty array of strings');
  let timeoutSeconds: number | null = null;
  if (body.timeout !== undefined && body.timeout !== null) {
    if (typeof body.timeout !== 'number' || !Number.isFinite(body.timeout) || body.timeout <= 0)
      throw invalid('timeout must be a positive number of seconds');
    timeoutSeconds = body.timeout;
  }
  const limits = isRecord(body.resourceLimits) ? body.resourceLimits : {};
  const image = context.images[uri] ?? uri;
  try {
    await context.docker.getImage(image).inspect();
  } catch {
    throw new OpenSandboxHttpError(
      400,
      'IMAGE_NOT_FOUND',
      `image ${uri}${image !== uri ? ` (${image})` : ''} is not on the Docker engine; the emulator pulls nothing (map it with \`images\`)`,
    );
  }
  return {
    imageUri: uri,
    image,
    entrypoint: entrypoint as string[],
    env: stringMap(body.env, 'env'),
    metadata: stringMap(body.metadata, 'metadata'),
    timeoutSeconds,
    nanoCpus: quantity(limits.cpu, 'resourceLimits.cpu', 'cpu'),
    memoryBytes: quantity(limits.memory, 'resourceLimits.memory', 'memory'),
    secureAccess: body.secureAccess === true,
    ...(networkPolicy ? { networkPolicy } : {}),
  };
}

/**
 * The create request's `networkPolicy`, checked as the server's model does: `defaultAction` and each
 * rule's `action` are `allow` or `deny`, each `target` a non-empty string (a domain, wildcard, address
 * or CIDR block). Omitted or empty: allow-all.
 */
function networkPolicyOf(value: unknown): SandboxNetworkPolicy | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isRecord(value)) throw invalid('networkPolicy must be an object');
  if (Object.keys(value).length === 0) return undefined;
  const action = (item: unknown, field: string): 'allow' | 'deny' => {
    if (item !== 'allow' && item !== 'deny') throw invalid(`${field} must be "allow" or "deny"`);
    return item;
  };
  const rules = value.egress ?? [];
  if (!Array.isArray(rules)) throw invalid('networkPolicy.egress must be a list of rules');
  return {
    // The sidecar's default when a policy leaves it out.
    defaultAction:
      value.defaultAction === undefined ? 'deny' : action(value.defaultAction, 'networkPolicy.defaultAction'),
    egress: rules.map((rule, index) => {
      const field = `networkPolicy.egress[${index}]`;
      if (!isRecord(rule) || typeof rule.target !== 'string' || rule.target.trim() === '')
        throw invalid(`${field}.target is required`);
      return { action: action(rule.action, `${field}.action`), target: rule.target };
    }),
  };
}

function list(context: LifecycleContext, query: URLSearchParams): Record<string, unknown> {
  const states = query.getAll('state').map((state) => state.toLowerCase());
  for (const state of states)
    if (!STATES.some((known) => known.toLowerCase() === state)) throw invalid(`unknown state ${state}`);
  // One parameter `k=v&k2=v2` (the SDK joins the pairs unencoded; the query string encodes it once).
  const metadata = [...new URLSearchParams(query.get('metadata') ?? '')];
  const page = Number(query.get('page') ?? 1);
  const pageSize = Number(query.get('pageSize') ?? 20);
  if (!Number.isInteger(page) || page < 1) throw invalid('page must be a positive integer');
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 200)
    throw invalid('pageSize must be 1 to 200');
  const matching = context.registry
    .list()
    .filter((record) => states.length === 0 || states.includes(record.state.toLowerCase()))
    .filter((record) => metadata.every(([key, value]) => record.settings.metadata[key] === value))
    .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? -1 : 1));
  const totalPages = Math.ceil(matching.length / pageSize);
  return {
    items: matching.slice((page - 1) * pageSize, page * pageSize).map(sandboxDto),
    pagination: { page, pageSize, totalItems: matching.length, totalPages, hasNextPage: page < totalPages },
  };
}

/** 202 with an empty body: it needs `Content-Length: 0`, or the SDK's JSON parsing fails on it. */
function accepted(response: ServerResponse): void {
  response.writeHead(202, { 'content-length': '0' });
  response.end();
}

/** The lifecycle API below `/v1` (`path` without it). */
export async function handleLifecycle(
  context: LifecycleContext,
  request: IncomingMessage,
  response: ServerResponse,
  path: string,
  query: URLSearchParams,
): Promise<void> {
  const { registry } = context;
  const method = request.method ?? 'GET';
  const objectBody = async (): Promise<Record<string, unknown>> => {
    const body = await jsonBody(request);
    if (!isRecord(body))
      throw new OpenSandboxHttpError(400, 'INVALID_REQUEST_BODY', 'the body must be a JSON object');
    return body;
  };
  if (path === '/metrics/events' && method === 'POST') {
    await jsonBody(request);
    sendEmpty(response, 204);
    return;
  }
  if (path === '/sandboxes' && method === 'POST') {
    const record = await registry.create(await createInput(context, await objectBody()));
    const { image: _image, ...created } = sandboxDto(record);
    sendJson(response, 202, created);
    return;
  }
  if (path === '/sandboxes' && method === 'GET') {
    sendJson(response, 200, list(context, query));
    return;
  }
  const match =
    /^\/sandboxes\/([^/]+)(?:\/(pause|resume|renew-expiration|metadata|endpoints\/([^/]+)))?$/.exec(path);
  if (!match) throw notFound(`Cannot ${method} /v1${path}`);
  const sandboxId = decodeURIComponent(match[1]!);
  const action = match[2]?.startsWith('endpoints/') ? 'endpoints' : match[2];
  const route = `${method} ${action ?? ''}`;
  switch (route) {
    case 'GET ':
      sendJson(response, 200, sandboxDto(registry.require(sandboxId)));
      return;
    case 'DELETE ':
      await registry.remove(sandboxId);
      sendEmpty(response, 204);
      return;
    case 'POST pause':
      await registry.pause(sandboxId);
      accepted(response);
      return;
    case 'POST resume':
      await registry.resume(sandboxId);
      accepted(response);
      return;
    case 'POST renew-expiration': {
      const body = await objectBody();
      const expiresAt = typeof body.expiresAt === 'string' ? new Date(body.expiresAt) : undefined;
      if (!expiresAt || Number.isNaN(expiresAt.getTime()))
        throw invalid('expiresAt must be an ISO date-time');
      const record = await registry.renew(sandboxId, expiresAt);
      sendJson(response, 200, { expiresAt: record.settings.expiresAt });
      return;
    }
    case 'PATCH metadata': {
      const body = await objectBody();
      const patch: Record<string, string | null> = {};
      for (const [key, value] of Object.entries(body)) {
        if (value !== null && typeof value !== 'string')
          throw invalid(`metadata.${key} must be a string or null`);
        patch[key] = value;
      }
      sendJson(response, 200, sandboxDto(await registry.patchMetadata(sandboxId, patch)));
      return;
    }
    case 'GET endpoints': {
      const port = Number(match[3]);
      if (!Number.isInteger(port) || port < 1 || port > 65535) throw invalid(`invalid port ${match[3]}`);
      const record = registry.require(sandboxId);
      const id = encodeURIComponent(sandboxId);
      const endpoint =
        port === EXECD_PORT
          ? `${context.host}/execd/${id}`
          : port === EGRESS_PORT
            ? `${context.host}/egress/${id}`
            : `${context.host}/execd/${id}/proxy/${port}`;
      sendJson(response, 200, {
        endpoint,
        ...(record.accessToken !== undefined && port !== EGRESS_PORT
          ? { headers: { [EXECD_ACCESS_TOKEN_HEADER]: record.accessToken } }
          : {}),
      });
      return;
    }
    default:
      throw new OpenSandboxHttpError(405, 'METHOD_NOT_ALLOWED', `Cannot ${method} /v1${path}`);
  }
}
