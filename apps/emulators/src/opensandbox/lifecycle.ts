import type { IncomingMessage, ServerResponse } from 'node:http';
import type Docker from 'dockerode';
import { isRecord, sendEmpty, sendJson, stringMap as stringMapOf } from '../http/http-util.js';
import { invalid, OpenSandboxHttpError, UnimplementedRequest, ValidationFailure } from './errors.js';
import { jsonBody } from './execd-files.js';
import type { OpenSandboxLimits } from './limits.js';
import type {
  CreateSandboxInput,
  SandboxNetworkPolicy,
  SandboxRecord,
  SandboxRegistry,
  SandboxState,
} from './sandbox-registry.js';
import type {
  CreateSandboxBody,
  EndpointBody,
  ListSandboxesBody,
  PatchMetadataBody,
  RenewExpirationBody,
  SandboxBody,
} from './wire-types.js';

export interface LifecycleContext {
  registry: SandboxRegistry;
  docker: Docker;
  /** Image URI → local image. */
  images: Readonly<Record<string, string>>;
  /** `127.0.0.1:<port>`: the host part of every endpoint. */
  host: string;
  /** The limits in force. */
  limits: Readonly<OpenSandboxLimits>;
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
export function sandboxDto(record: SandboxRecord): SandboxBody {
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
  const timeoutSeconds = timeoutOf(body.timeout, context.limits);
  const metadata = stringMap(body.metadata, 'metadata');
  checkMetadataLabels(metadata);
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
    metadata,
    timeoutSeconds,
    nanoCpus: quantity(limits.cpu, 'resourceLimits.cpu', 'cpu'),
    memoryBytes: quantity(limits.memory, 'resourceLimits.memory', 'memory'),
    secureAccess: body.secureAccess === true,
    ...(networkPolicy ? { networkPolicy } : {}),
  };
}

/**
 * The create request's `timeout` in seconds (null: none), checked as the server does: a whole number
 * of at least the minimum (else FastAPI's 422), and at most the configured maximum (else 400).
 */
function timeoutOf(value: unknown, limits: Readonly<OpenSandboxLimits>): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value))
    throw new ValidationFailure(['body', 'timeout'], 'Input should be a valid integer', value);
  if (value < limits.timeoutMinSeconds)
    throw new ValidationFailure(
      ['body', 'timeout'],
      `Input should be greater than or equal to ${limits.timeoutMinSeconds}`,
      value,
    );
  if (value > limits.timeoutMaxSeconds)
    throw new OpenSandboxHttpError(
      400,
      'SANDBOX::INVALID_PARAMETER',
      `Sandbox timeout ${value}s exceeds configured maximum of ${limits.timeoutMaxSeconds}s.`,
    );
  return value;
}

const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^(?:[a-z0-9]([-a-z0-9]*[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Whether `key` is a Kubernetes label key: a name of up to 63, after an optional DNS-subdomain prefix. */
function isLabelKey(key: string): boolean {
  const slash = key.indexOf('/');
  const prefix = slash < 0 ? undefined : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (prefix !== undefined && (prefix === '' || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)))
    return false;
  return name.length <= 63 && LABEL_NAME.test(name);
}

/**
 * Metadata as the server checks it: Kubernetes label rules for keys and values (a value is empty or up
 * to 63 of `[A-Za-z0-9-_.]`, alphanumeric at both ends), and no key under `opensandbox.io/`; else 400
 * `SANDBOX::INVALID_METADATA_LABEL`.
 */
export function checkMetadataLabels(metadata: Readonly<Record<string, string>>): void {
  const refuse = (message: string) =>
    new OpenSandboxHttpError(400, 'SANDBOX::INVALID_METADATA_LABEL', message);
  for (const [key, value] of Object.entries(metadata)) {
    if (key.startsWith('opensandbox.io/'))
      throw refuse(`Metadata key '${key}' uses the reserved prefix 'opensandbox.io/'.`);
    if (!isLabelKey(key)) throw refuse(`Metadata key '${key}' is invalid.`);
    if (value.length > 63 || !(value === '' || LABEL_NAME.test(value)))
      throw refuse(
        `Metadata value '${value}' is invalid: must be 63 characters or less, start/end with an alphanumeric character, and contain only alphanumeric, '-', '_', or '.' characters.`,
      );
  }
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

function list(context: LifecycleContext, query: URLSearchParams): ListSandboxesBody {
  const states = query.getAll('state').map((state) => state.toLowerCase());
  for (const state of states)
    if (!STATES.some((known) => known.toLowerCase() === state)) throw invalid(`unknown state ${state}`);
  // One parameter `k=v&k2=v2` (the SDK joins the pairs unencoded; the query string encodes it once).
  const metadata = [...new URLSearchParams(query.get('metadata') ?? '')];
  const page = Number(query.get('page') ?? 1);
  const pageSize = Number(query.get('pageSize') ?? Math.min(20, context.limits.pageSizeMax));
  if (!Number.isInteger(page) || page < 1) throw invalid('page must be a positive integer');
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > context.limits.pageSizeMax)
    throw new ValidationFailure(
      ['query', 'pageSize'],
      `Input should be less than or equal to ${context.limits.pageSizeMax}`,
      query.get('pageSize'),
    );
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
    sendJson(response, 202, created satisfies CreateSandboxBody);
    return;
  }
  if (path === '/sandboxes' && method === 'GET') {
    sendJson(response, 200, list(context, query));
    return;
  }
  const match =
    /^\/sandboxes\/([^/]+)(?:\/(pause|resume|renew-expiration|metadata|endpoints\/([^/]+)))?$/.exec(path);
  if (!match) throw new UnimplementedRequest(`${method} /v1${path}`);
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
      const renewed: RenewExpirationBody = {
        expiresAt: record.settings.expiresAt ?? expiresAt.toISOString(),
      };
      sendJson(response, 200, renewed);
      return;
    }
    case 'PATCH metadata': {
      const body = await objectBody();
      const patch: Record<string, string | null> = {};
      for (const [key, value] of Object.entries(body)) {
        if (value !== null && typeof value !== 'string')
          throw invalid(`metadata.${key} must be a string or null`);
        if (key.startsWith('opensandbox.io/'))
          throw new OpenSandboxHttpError(
            400,
            'INVALID_METADATA_LABEL',
            `Metadata key '${key}' is reserved (opensandbox.io/ prefix).`,
          );
        patch[key] = value;
      }
      checkMetadataLabels(
        Object.fromEntries(
          Object.entries(patch).filter((entry): entry is [string, string] => entry[1] !== null),
        ),
      );
      const patched: PatchMetadataBody = sandboxDto(await registry.patchMetadata(sandboxId, patch));
      sendJson(response, 200, patched);
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
      const body: EndpointBody = {
        endpoint,
        ...(record.accessToken !== undefined && port !== EGRESS_PORT
          ? { headers: { [EXECD_ACCESS_TOKEN_HEADER]: record.accessToken } }
          : {}),
      };
      sendJson(response, 200, body);
      return;
    }
    default:
      throw new UnimplementedRequest(`${method} /v1${path}`, 405, 'METHOD_NOT_ALLOWED');
  }
}
