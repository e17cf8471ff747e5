import type { IncomingMessage, ServerResponse } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocketServer } from 'ws';
import { dockerMessage } from '../docker/exec.js';
import { HttpError, isRecord, readJson } from '../http/http-util.js';
import { chooseProtocol, EXEC_PROTOCOLS, execRequestOf, upgradeExec } from './exec-websocket.js';
import type { ObjectMeta, ResourceVersions } from './labels.js';
import type { NamespaceStore } from './namespaces.js';
import type { NetworkPolicyStore } from './network-policies.js';
import { patchTypeOf } from './patch.js';
import type { PodStore } from './pods.js';
import type { PvcStore } from './pvcs.js';
import { parseFieldSelector, parseLabelSelector } from './selectors.js';
import { badRequest, failureStatus, K8sError, sendJson, sendStatus } from './status.js';
import { serveWatch } from './watch.js';

export interface ApiContext {
  token: string;
  namespaces: NamespaceStore;
  pods: PodStore;
  pvcs: PvcStore;
  networkPolicies: NetworkPolicyStore;
  versions: ResourceVersions;
  webSockets: WebSocketServer;
  log: (line: string) => void;
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

async function body(request: IncomingMessage): Promise<unknown> {
  try {
    return await readJson(request, 4 << 20);
  } catch (error) {
    if (error instanceof HttpError) throw new K8sError(error.status, 'BadRequest', error.message);
    throw error;
  }
}

/** The grace period of a delete: the query's, else the DeleteOptions body's. */
async function gracePeriod(request: IncomingMessage, query: URLSearchParams): Promise<number | undefined> {
  const options = await body(request);
  const value =
    query.get('gracePeriodSeconds') ?? (isRecord(options) ? options.gracePeriodSeconds : undefined);
  if (value === undefined || value === null) return undefined;
  const grace = Number(value);
  if (!Number.isFinite(grace) || grace < 0) throw badRequest(`invalid gracePeriodSeconds: ${String(value)}`);
  return grace;
}

function list(
  context: ApiContext,
  kind: string,
  items: unknown[],
  apiVersion = 'v1',
): Record<string, unknown> {
  return { kind, apiVersion, metadata: { resourceVersion: context.versions.current() }, items };
}

function metadataFields(metadata: ObjectMeta): Record<string, string> {
  return { 'metadata.name': metadata.name, 'metadata.namespace': metadata.namespace ?? '' };
}

function notAllowed(request: IncomingMessage): K8sError {
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
      if (method === 'POST') return sendJson(response, 201, await namespaces.create(await body(request)));
      if (method !== 'GET') throw notAllowed(request);
      const fields = parseFieldSelector(query.get('fieldSelector'), ['metadata.name', 'status.phase']);
      const items = namespaces
        .list((metadata) => labels(metadata.labels))
        .filter((item) => {
          const status = item.status as { phase: string };
          return fields({ ...metadataFields(item.metadata as ObjectMeta), 'status.phase': status.phase });
        });
      return sendJson(response, 200, list(context, 'NamespaceList', items));
    }
    if (method === 'GET') return sendJson(response, 200, namespaces.read(route.name));
    if (method === 'DELETE') return sendJson(response, 200, await namespaces.delete(route.name));
    throw notAllowed(request);
  }
  const namespace = route.namespace;
  if (namespace !== undefined && method !== 'DELETE') context.namespaces.check(namespace, method === 'POST');
  if (route.resource === 'networkpolicies') {
    const { networkPolicies } = context;
    if (route.name === undefined) {
      if (method === 'POST' && namespace !== undefined)
        return sendJson(response, 201, await networkPolicies.create(namespace, await body(request)));
      if (method !== 'GET') throw notAllowed(request);
      const fields = parseFieldSelector(query.get('fieldSelector'), ['metadata.name', 'metadata.namespace']);
      const items = networkPolicies.list(
        namespace,
        (metadata) => labels(metadata.labels) && fields(metadataFields(metadata)),
      );
      return sendJson(response, 200, list(context, 'NetworkPolicyList', items, 'networking.k8s.io/v1'));
    }
    if (method === 'GET') return sendJson(response, 200, networkPolicies.read(namespace!, route.name));
    if (method === 'DELETE') {
      await body(request);
      return sendJson(response, 200, await networkPolicies.delete(namespace!, route.name));
    }
    throw notAllowed(request);
  }
  if (route.resource === 'persistentvolumeclaims') {
    const { pvcs } = context;
    if (route.name === undefined) {
      if (method === 'POST' && namespace !== undefined)
        return sendJson(response, 201, await pvcs.create(namespace, await body(request)));
      if (method !== 'GET') throw notAllowed(request);
      const fields = parseFieldSelector(query.get('fieldSelector'), ['metadata.name', 'metadata.namespace']);
      const items = pvcs.list(
        namespace,
        (metadata) => labels(metadata.labels) && fields(metadataFields(metadata)),
      );
      return sendJson(response, 200, list(context, 'PersistentVolumeClaimList', items));
    }
    if (route.sub !== undefined && route.sub !== 'status') throw notAllowed(request);
    if (method === 'GET') return sendJson(response, 200, pvcs.read(namespace!, route.name));
    if (method === 'PATCH' && route.sub === undefined) {
      const type = patchTypeOf(request.headers['content-type']);
      return sendJson(response, 200, pvcs.patch(namespace!, route.name, type, await body(request)));
    }
    if (method === 'DELETE' && route.sub === undefined) {
      await body(request);
      return sendJson(response, 200, await pvcs.delete(namespace!, route.name));
    }
    throw notAllowed(request);
  }
  const { pods } = context;
  if (route.name === undefined) {
    if (method === 'POST' && namespace !== undefined)
      return sendJson(response, 201, await pods.create(namespace, await body(request)));
    if (method !== 'GET') throw notAllowed(request);
    const supported = ['metadata.name', 'metadata.namespace', 'status.phase', 'spec.nodeName'];
    const fields = parseFieldSelector(query.get('fieldSelector'), supported);
    const accept = (pod: Record<string, unknown>) => {
      const metadata = pod.metadata as ObjectMeta;
      const phase = (pod.status as { phase: string }).phase;
      const nodeName = String((pod.spec as { nodeName?: string }).nodeName ?? '');
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
    return sendJson(response, 200, list(context, 'PodList', items));
  }
  if (route.sub === 'exec')
    throw badRequest('exec needs a WebSocket upgrade (subprotocol v5.channel.k8s.io or v4.channel.k8s.io)');
  if (route.sub !== undefined && route.sub !== 'status') throw notAllowed(request);
  if (method === 'GET') return sendJson(response, 200, await pods.read(namespace!, route.name));
  if (method === 'DELETE' && route.sub === undefined)
    return sendJson(
      response,
      200,
      await pods.delete(namespace!, route.name, await gracePeriod(request, query)),
    );
  throw notAllowed(request);
}

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
  try {
    if (!authorized(context, request)) throw UNAUTHORIZED;
    const url = new URL(request.url ?? '/', 'http://emulator');
    if (url.pathname === '/version')
      return sendJson(response, 200, {
        major: '1',
        minor: '31',
        gitVersion: 'v1.31.0-ws-emulator',
        platform: 'linux/amd64',
      });
    if (url.pathname === '/api')
      return sendJson(response, 200, {
        kind: 'APIVersions',
        versions: ['v1'],
        serverAddressByClientCIDRs: [],
      });
    const route = routeOf(url.pathname);
    if (!route) throw new K8sError(404, 'NotFound', 'the server could not find the requested resource');
    if (watching(url.searchParams) && (route.resource !== 'pods' || 'name' in route))
      throw badRequest('the emulator watches pod lists only; poll the others with get or list');
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
    if (route?.resource !== 'pods' || route.sub !== 'exec' || !route.namespace || !route.name)
      throw new K8sError(404, 'NotFound', 'the server could not find the requested resource');
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
