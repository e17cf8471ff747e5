import type { IncomingMessage, ServerResponse } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type {
  V1APIVersions,
  V1ListMeta,
  V1NamespaceList,
  V1NetworkPolicyList,
  V1PersistentVolumeClaimList,
  V1Pod,
  V1PodList,
  VersionInfo,
} from '@kubernetes/client-node';
import type { WebSocketServer } from 'ws';
import { dockerMessage } from '../docker/exec.js';
import { HttpError, isRecord, readJson } from '../http/http-util.js';
import type { UnimplementedLog } from '../http/unimplemented.js';
import { chooseProtocol, EXEC_PROTOCOLS, execRequestOf, upgradeExec } from './exec-websocket.js';
import type { ObjectMeta, ResourceVersions } from './labels.js';
import type { K8sLimits } from './limits.js';
import type { NamespaceStore } from './namespaces.js';
import type { NetworkPolicyStore } from './network-policies.js';
import { patchTypeOf } from './patch.js';
import type { PodStore } from './pods.js';
import type { PvcStore } from './pvcs.js';
import { parseFieldSelector, parseLabelSelector } from './selectors.js';
import { badRequest, failureStatus, K8sError, sendJson, sendStatus } from './status.js';
import { serveWatch } from './watch.js';
import type { Wire } from './wire.js';

export interface ApiContext {
  token: string;
  namespaces: NamespaceStore;
  pods: PodStore;
  pvcs: PvcStore;
  networkPolicies: NetworkPolicyStore;
  versions: ResourceVersions;
  webSockets: WebSocketServer;
  log: (line: string) => void;
  /** Requests the emulator does not implement are reported here. */
  unimplemented: UnimplementedLog;
  limits: K8sLimits;
  /** Requests being served now, long-running ones (watch, exec) left out: all, and mutating ones. */
  inFlight: { all: number; mutating: number };
}

type Route =
  | { resource: 'namespaces'; name?: string }
  | { resource: 'pods' | 'persistentvolumeclaims'; namespace?: string; name?: string; sub?: string }
  | { resource: 'networkpolicies'; namespace?: string; name?: string };

/** `/apis/networking.k8s.io/v1[/namespaces/ns]/networkpolicies[/name]`. */
function networkingRouteOf(parts: readonly string[]): Route | undefined {
  const rest = parts.slice(3).map((part) => decodeURIComponent(part));
  if (rest.length === 1 && rest[0] === 'networkpolicies') return { resource: 'networkpolicies' };
  if (rest[0] !== 'namespaces' || rest[2] !== 'networkpolicies' || rest.length > 4) return undefined;
  return { resource: 'networkpolicies', namespace: rest[1], ...(rest[3] ? { name: rest[3] } : {}) };
}

/**
 * `/api/v1/namespaces[/ns[/pods|persistentvolumeclaims[/name[/status|exec]]]]`, `/api/v1/pods`, and
 * the NetworkPolicies of `/apis/networking.k8s.io/v1`.
 */
function routeOf(pathname: string): Route | undefined {
  const parts = pathname.split('/').filter((part) => part !== '');
  if (parts[0] === 'apis' && parts[1] === 'networking.k8s.io' && parts[2] === 'v1')
    return networkingRouteOf(parts);
  if (parts[0] !== 'api' || parts[1] !== 'v1') return undefined;
  const rest = parts.slice(2).map((part) => decodeURIComponent(part));
  if (rest.length === 1 && (rest[0] === 'pods' || rest[0] === 'persistentvolumeclaims'))
    return { resource: rest[0] };
  if (rest[0] !== 'namespaces') return undefined;
  if (rest.length <= 2) return { resource: 'namespaces', ...(rest[1] ? { name: rest[1] } : {}) };
  const resource = rest[2];
  if ((resource !== 'pods' && resource !== 'persistentvolumeclaims') || rest.length > 5) return undefined;
  return {
    resource,
    namespace: rest[1],
    ...(rest[3] ? { name: rest[3] } : {}),
    ...(rest[4] ? { sub: rest[4] } : {}),
  };
}

function watching(query: URLSearchParams): boolean {
  return query.get('watch') === 'true' || query.get('watch') === '1';
}

function authorized(context: ApiContext, request: IncomingMessage): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  return match?.[1] === context.token;
}

const UNAUTHORIZED = new K8sError(401, 'Unauthorized', 'Unauthorized');

/** The API server's 413 for a body over `requestBodyBytes`. */
function tooLarge(context: ApiContext): K8sError {
  return new K8sError(
    413,
    'RequestEntityTooLarge',
    `Request entity too large: limit is ${context.limits.requestBodyBytes}`,
  );
}

/** The JSON body of a request, up to `requestBodyBytes` (a larger one: 413, as the API server answers). */
async function body(context: ApiContext, request: IncomingMessage): Promise<unknown> {
  const limit = context.limits.requestBodyBytes;
  try {
    return await readJson(request, limit);
  } catch (error) {
    if (error instanceof HttpError && error.status === 413) throw tooLarge(context);
    if (error instanceof HttpError) throw new K8sError(error.status, 'BadRequest', error.message);
    throw error;
  }
}

/** What a delete asks for: its grace period (the query's, else the body's) and its preconditions. */
interface DeleteRequest {
  gracePeriodSeconds?: number;
  preconditions: { uid?: string; resourceVersion?: string };
}

/** Reads the `DeleteOptions` of a delete (its body) and its query. */
async function deleteRequest(
  context: ApiContext,
  request: IncomingMessage,
  query: URLSearchParams,
): Promise<DeleteRequest> {
  const options = await body(context, request);
  const given = isRecord(options) ? options : {};
  const value = query.get('gracePeriodSeconds') ?? given.gracePeriodSeconds;
  const preconditions = isRecord(given.preconditions) ? given.preconditions : {};
  const text = (field: unknown) => (typeof field === 'string' && field !== '' ? field : undefined);
  const uid = text(preconditions.uid);
  const resourceVersion = text(preconditions.resourceVersion);
  const wanted = {
    preconditions: { ...(uid ? { uid } : {}), ...(resourceVersion ? { resourceVersion } : {}) },
  };
  if (value === undefined || value === null) return wanted;
  const grace = Number(value);
  if (!Number.isFinite(grace) || grace < 0) throw badRequest(`invalid gracePeriodSeconds: ${String(value)}`);
  return { ...wanted, gracePeriodSeconds: grace };
}

/**
 * Throws the API server's 409 when a delete's preconditions (uid, resourceVersion) do not match the
 * object as it is: only the object the client read is deleted.
 */
function checkPreconditions(
  resource: string,
  current: { metadata?: { name?: string; uid?: string; resourceVersion?: string } },
  { preconditions }: DeleteRequest,
): void {
  const name = current.metadata?.name ?? '';
  const conflict = (field: string, wanted: string, actual: string | undefined) =>
    new K8sError(
      409,
      'Conflict',
      `Operation cannot be fulfilled on ${resource} "${name}": Precondition failed: ${field} in precondition: ${wanted}, ${field} in object meta: ${actual ?? ''}`,
      { name, kind: resource },
    );
  if (preconditions.uid !== undefined && preconditions.uid !== current.metadata?.uid)
    throw conflict('UID', preconditions.uid, current.metadata?.uid);
  const version = preconditions.resourceVersion;
  if (version !== undefined && version !== current.metadata?.resourceVersion)
    throw conflict('ResourceVersion', version, current.metadata?.resourceVersion);
}

/** The `metadata` of a list: the store's resource version at the time it was read. */
function listMeta(context: ApiContext): Wire<V1ListMeta> {
  return { resourceVersion: context.versions.current() };
}

function metadataFields(metadata: ObjectMeta): Record<string, string> {
  return { 'metadata.name': metadata.name, 'metadata.namespace': metadata.namespace ?? '' };
}

/** A 405 for a method the emulator does not serve on a resource it knows (reported as unimplemented). */
function notAllowed(context: ApiContext, request: IncomingMessage): K8sError {
  context.unimplemented.report(`${request.method} ${pathOf(request)}`);
  return new K8sError(
    405,
    'MethodNotAllowed',
    `the server does not allow this method on the requested resource (${request.method})`,
  );
}

async function handleRoute(
  context: ApiContext,
  request: IncomingMessage,
  response: ServerResponse,
  route: Route,
  query: URLSearchParams,
): Promise<void> {
  const method = request.method ?? 'GET';
  const labels = parseLabelSelector(query.get('labelSelector'));
  if (route.resource === 'namespaces') {
    const { namespaces } = context;
    if (route.name === undefined) {
      if (method === 'POST')
        return sendJson(response, 201, await namespaces.create(await body(context, request)));
      if (method !== 'GET') throw notAllowed(context, request);
      const fields = parseFieldSelector(query.get('fieldSelector'), ['metadata.name', 'status.phase']);
      const items = namespaces
        .list((metadata) => labels(metadata.labels))
        .filter((item) => {
          const status = item.status as { phase: string };
          return fields({ ...metadataFields(item.metadata as ObjectMeta), 'status.phase': status.phase });
        });
      const namespaceList: Wire<V1NamespaceList> = {
        kind: 'NamespaceList',
        apiVersion: 'v1',
        metadata: listMeta(context),
        items,
      };
      return sendJson(response, 200, namespaceList);
    }
    if (method === 'GET') return sendJson(response, 200, namespaces.read(route.name));
    if (method === 'DELETE') return sendJson(response, 200, await namespaces.delete(route.name));
    throw notAllowed(context, request);
  }
  const namespace = route.namespace;
  if (namespace !== undefined && method !== 'DELETE') context.namespaces.check(namespace, method === 'POST');
  if (route.resource === 'networkpolicies') {
    const { networkPolicies } = context;
    if (route.name === undefined) {
      if (method === 'POST' && namespace !== undefined)
        return sendJson(response, 201, await networkPolicies.create(namespace, await body(context, request)));
      if (method !== 'GET') throw notAllowed(context, request);
      const fields = parseFieldSelector(query.get('fieldSelector'), ['metadata.name', 'metadata.namespace']);
      const items = networkPolicies.list(
        namespace,
        (metadata) => labels(metadata.labels) && fields(metadataFields(metadata)),
      );
      const policyList: Wire<V1NetworkPolicyList> = {
        kind: 'NetworkPolicyList',
        apiVersion: 'networking.k8s.io/v1',
        metadata: listMeta(context),
        items,
      };
      return sendJson(response, 200, policyList);
    }
    if (method === 'GET') return sendJson(response, 200, networkPolicies.read(namespace!, route.name));
    if (method === 'DELETE') {
      const asked = await deleteRequest(context, request, query);
      checkPreconditions('networkpolicies', networkPolicies.read(namespace!, route.name), asked);
      return sendJson(response, 200, await networkPolicies.delete(namespace!, route.name));
    }
    throw notAllowed(context, request);
  }
  if (route.resource === 'persistentvolumeclaims') {
    const { pvcs } = context;
    if (route.name === undefined) {
      if (method === 'POST' && namespace !== undefined)
        return sendJson(response, 201, await pvcs.create(namespace, await body(context, request)));
      if (method !== 'GET') throw notAllowed(context, request);
      const fields = parseFieldSelector(query.get('fieldSelector'), ['metadata.name', 'metadata.namespace']);
      const items = pvcs.list(
        namespace,
        (metadata) => labels(metadata.labels) && fields(metadataFields(metadata)),
      );
      const claimList: Wire<V1PersistentVolumeClaimList> = {
        kind: 'PersistentVolumeClaimList',
        apiVersion: 'v1',
        metadata: listMeta(context),
        items,
      };
      return sendJson(response, 200, claimList);
    }
    if (route.sub !== undefined && route.sub !== 'status') throw notAllowed(context, request);
    if (method === 'GET') return sendJson(response, 200, pvcs.read(namespace!, route.name));
    if (method === 'PATCH' && route.sub === undefined) {
      const type = patchTypeOf(request.headers['content-type']);
      return sendJson(response, 200, pvcs.patch(namespace!, route.name, type, await body(context, request)));
    }
    if (method === 'DELETE' && route.sub === undefined) {
      const asked = await deleteRequest(context, request, query);
      checkPreconditions('persistentvolumeclaims', pvcs.read(namespace!, route.name), asked);
      return sendJson(response, 200, await pvcs.delete(namespace!, route.name));
    }
    throw notAllowed(context, request);
  }
  const { pods } = context;
  if (route.name === undefined) {
    if (method === 'POST' && namespace !== undefined)
      return sendJson(response, 201, await pods.create(namespace, await body(context, request)));
    if (method !== 'GET') throw notAllowed(context, request);
    const supported = ['metadata.name', 'metadata.namespace', 'status.phase', 'spec.nodeName'];
    const fields = parseFieldSelector(query.get('fieldSelector'), supported);
    const accept = (pod: Wire<V1Pod>) => {
      const metadata = pod.metadata as ObjectMeta;
      const phase = pod.status?.phase ?? '';
      const nodeName = pod.spec?.nodeName ?? '';
      return (
        labels(metadata.labels) &&
        fields({ ...metadataFields(metadata), 'status.phase': phase, 'spec.nodeName': nodeName })
      );
    };
    if (watching(query))
      return serveWatch(
        request,
        response,
        query,
        () => pods.list(namespace, accept),
        (listener) =>
          pods.subscribe((type, pod) => {
            const inNamespace =
              namespace === undefined || (pod.metadata as ObjectMeta).namespace === namespace;
            if (inNamespace && (type === 'DELETED' || accept(pod))) listener(type, pod);
          }),
      );
    const items = await pods.list(namespace, accept);
    const podList: Wire<V1PodList> = {
      kind: 'PodList',
      apiVersion: 'v1',
      metadata: listMeta(context),
      items,
    };
    return sendJson(response, 200, podList);
  }
  if (route.sub === 'exec')
    throw badRequest('exec needs a WebSocket upgrade (subprotocol v5.channel.k8s.io or v4.channel.k8s.io)');
  if (route.sub !== undefined && route.sub !== 'status') throw notAllowed(context, request);
  if (method === 'GET') return sendJson(response, 200, await pods.read(namespace!, route.name));
  if (method === 'DELETE' && route.sub === undefined) {
    const asked = await deleteRequest(context, request, query);
    checkPreconditions('pods', await pods.read(namespace!, route.name), asked);
    return sendJson(response, 200, await pods.delete(namespace!, route.name, asked.gracePeriodSeconds));
  }
  throw notAllowed(context, request);
}

/** The path of a request, without its query. */
function pathOf(request: IncomingMessage): string {
  return (request.url ?? '/').split('?')[0]!;
}

/** Whether a request is long-running (a watch): the API server leaves those out of its in-flight limits. */
function longRunning(url: URL): boolean {
  return watching(url.searchParams);
}

/**
 * Counts a request against `requestsInFlight` (or, for a change, `mutatingRequestsInFlight`) and
 * returns its release, or undefined when the limit is reached: the caller answers as the API server's
 * max-in-flight filter does (see {@link tooManyRequests}).
 */
function admit(context: ApiContext, request: IncomingMessage): (() => void) | undefined {
  const mutating = !['GET', 'HEAD', 'OPTIONS'].includes(request.method ?? 'GET');
  const { inFlight, limits } = context;
  const full = mutating
    ? inFlight.mutating >= limits.mutatingRequestsInFlight
    : inFlight.all - inFlight.mutating >= limits.requestsInFlight;
  if (full) return undefined;
  inFlight.all++;
  if (mutating) inFlight.mutating++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    inFlight.all--;
    if (mutating) inFlight.mutating--;
  };
}

/** The API server's refusal past its in-flight limits: 429, `Retry-After: 1`, a line of plain text (no Status). */
function tooManyRequests(response: ServerResponse): void {
  const text = 'Too many requests, please try again later.\n';
  response.writeHead(429, {
    'retry-after': '1',
    'content-type': 'text/plain; charset=utf-8',
    'x-content-type-options': 'nosniff',
    'content-length': String(Buffer.byteLength(text)),
  });
  response.end(text);
}

const VERSION: Wire<VersionInfo> = {
  major: '1',
  minor: '31',
  gitVersion: 'v1.31.0-ws-emulator',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2024-08-13T00:00:00Z',
  goVersion: 'go1.22.5',
  compiler: 'gc',
  platform: 'linux/amd64',
};

const API_VERSIONS: Wire<V1APIVersions> = {
  kind: 'APIVersions',
  versions: ['v1'],
  serverAddressByClientCIDRs: [],
};

/** Serves one REST request: auth, routing, `Status` bodies on every error. */
export async function handleRequest(
  context: ApiContext,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const started = Date.now();
  response.once('finish', () =>
    context.log(`${request.method} ${request.url} ${response.statusCode} ${Date.now() - started}ms`),
  );
  let release = () => {};
  response.once('close', () => release());
  try {
    if (!authorized(context, request)) throw UNAUTHORIZED;
    const url = new URL(request.url ?? '/', 'http://emulator');
    if (!longRunning(url)) {
      const admitted = admit(context, request);
      if (!admitted) {
        request.resume();
        return tooManyRequests(response);
      }
      release = admitted;
    }
    // A body declared larger than the limit is refused before it is read, whatever the resource.
    const declared = Number(request.headers['content-length'] ?? 0);
    if (declared > context.limits.requestBodyBytes) throw tooLarge(context);
    if (url.pathname === '/version') return sendJson(response, 200, VERSION);
    if (url.pathname === '/api') return sendJson(response, 200, API_VERSIONS);
    const route = routeOf(url.pathname);
    if (!route) {
      context.unimplemented.report(`${request.method} ${url.pathname}`);
      throw new K8sError(404, 'NotFound', 'the server could not find the requested resource');
    }
    if (watching(url.searchParams) && (route.resource !== 'pods' || 'name' in route)) {
      context.unimplemented.report(`${request.method} ${url.pathname} (watch)`);
      throw badRequest('the emulator watches pod lists only; poll the others with get or list');
    }
    await handleRoute(context, request, response, route, url.searchParams);
  } catch (error) {
    request.resume();
    if (error instanceof K8sError) return sendStatus(response, error);
    context.log(`${request.method} ${request.url} failed: ${dockerMessage(error)}`);
    sendStatus(
      response,
      new K8sError(500, 'InternalError', `Internal error occurred: ${dockerMessage(error)}`),
    );
  }
}

/** Serves an exec upgrade; anything else, or a refused one, gets an HTTP `Status` reply. */
export function handleUpgrade(
  context: ApiContext,
  request: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): void {
  const refuse = (error: K8sError) => {
    const text = JSON.stringify(failureStatus(error));
    context.log(`GET ${request.url} (websocket) ${error.code}: ${error.message}`);
    socket.end(
      `HTTP/1.1 ${error.code} ${STATUS_CODES[error.code] ?? 'Error'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
    );
  };
  void (async () => {
    if (!authorized(context, request)) throw UNAUTHORIZED;
    const url = new URL(request.url ?? '/', 'http://emulator');
    const route = routeOf(url.pathname);
    if (route?.resource !== 'pods' || route.sub !== 'exec' || !route.namespace || !route.name) {
      context.unimplemented.report(`GET ${url.pathname} (websocket)`);
      throw new K8sError(404, 'NotFound', 'the server could not find the requested resource');
    }
    const offered = new Set(
      (request.headers['sec-websocket-protocol'] ?? '').split(',').map((protocol) => protocol.trim()),
    );
    if (!chooseProtocol(offered))
      throw badRequest(`exec needs one of the subprotocols ${EXEC_PROTOCOLS.join(', ')}`);
    const exec = execRequestOf(url.searchParams);
    context.namespaces.check(route.namespace);
    const container = await context.pods.runningContainer(route.namespace, route.name, exec.container);
    context.log(`GET ${request.url} (websocket exec)`);
    upgradeExec(context.webSockets, request, socket, head, container, exec, context.log);
  })().catch((error: unknown) =>
    refuse(error instanceof K8sError ? error : new K8sError(500, 'InternalError', dockerMessage(error))),
  );
}
