import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import Docker from 'dockerode';
import { DEFAULT_OPENSANDBOX_IMAGES } from '../default-images.js';
import { dockerMessage, dockerStatus } from '../docker/exec.js';
import type { SandboxNetworkOption } from '../docker/network.js';
import { removeContainers } from '../docker/remove-containers.js';
import { listenOnLoopback, serverCloser } from '../http/serve.js';
import { UnimplementedLog } from '../http/unimplemented.js';
import { resolveLimits } from '../limits.js';
import { OpenSandboxHttpError, requestId, sendOpenSandboxError, UnimplementedRequest } from './errors.js';
import { checkExecdAccess, handleExecd } from './execd.js';
import { proxyTarget, proxyUpgrade } from './execd-proxy.js';
import { OPENSANDBOX_LABELS, openSandboxFilter } from './labels.js';
import { handleLifecycle, type LifecycleContext } from './lifecycle.js';
import { OPENSANDBOX_LIMITS, type OpenSandboxLimits } from './limits.js';
import { SandboxRegistry } from './sandbox-registry.js';

export { OPENSANDBOX_LABELS } from './labels.js';

/** The API key in `env` when `apiKeys` does not name one. */
export const DEFAULT_OPENSANDBOX_API_KEY = 'opensandbox_emulator';

/** The header OpenSandbox reads the API key from, on the lifecycle API and on execd. */
export const OPENSANDBOX_API_KEY_HEADER = 'open-sandbox-api-key';

/** Options of {@link startOpenSandboxEmulator}. */
export interface OpenSandboxEmulatorOptions extends SandboxNetworkOption {
  /** TCP port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
  /**
   * The port clients reach the emulator on, when a proxy on 127.0.0.1 stands in front of it: every
   * URL the emulator hands out (its own, each sandbox's execd endpoint) names this port. Default: its own.
   */
  publicPort?: number;
  /** A dockerode client (never closed by the emulator) or options for one; default: the local engine. */
  docker?: Docker | Docker.DockerOptions;
  /** The only `OPEN-SANDBOX-API-KEY` values accepted; default: any non-empty key. */
  apiKeys?: readonly string[];
  /**
   * Image URI → local image, merged over {@link DEFAULT_OPENSANDBOX_IMAGES}. A URI that is not here but
   * names an image the engine has also works; the emulator pulls nothing.
   */
  images?: Readonly<Record<string, string>>;
  /**
   * The name of this emulator's sandboxes (`[A-Za-z0-9_.-]`, up to 64): an emulator creates, takes over
   * and ends only the containers of its instance. Default `default`.
   */
  instance?: string;
  /** How long `Pending`, `Pausing` and `Resuming` last at least, in ms (default 300). */
  transitionMs?: number;
  /** Receives one line per lifecycle event and per request. */
  onLog?: (line: string) => void;
  /**
   * Limits that differ from the real service's defaults ({@link OPENSANDBOX_LIMITS}: the sandbox
   * timeout's bounds in seconds, the page size, requests at once, processes per sandbox, upload bytes),
   * so that a test meets one cheaply. An unknown name or a negative value throws.
   */
  limits?: Partial<Record<keyof OpenSandboxLimits, number>>;
}

/** A running emulator. `close()` is idempotent and leaves the sandboxes' containers in place. */
export interface OpenSandboxEmulator extends AsyncDisposable {
  /** The SDK's `domain` (`OPEN_SANDBOX_DOMAIN`): `http://127.0.0.1:<port>`. */
  url: string;
  /** A key the emulator accepts. */
  apiKey: string;
  /** `OPEN_SANDBOX_DOMAIN` and `OPEN_SANDBOX_API_KEY` for the SDK. */
  env: Record<string, string>;
  /**
   * The requests received so far that the emulator does not implement (`GET /v1/snapshots`, …), oldest
   * first; each is also logged as `opensandbox: unimplemented <request>`.
   */
  readonly unimplemented: readonly string[];
  /**
   * Stops serving. Changes already accepted (a pause or resume answered 202, a removal, a start) are
   * finished first, waiting 30 s at most; the sandboxes' containers stay.
   */
  close(): Promise<void>;
}

function dockerClient(docker: OpenSandboxEmulatorOptions['docker']): Docker {
  return docker instanceof Docker ? docker : new Docker(docker);
}

type Target =
  | { kind: 'lifecycle'; path: string }
  | { kind: 'execd' | 'egress'; sandboxId: string; path: string }
  | undefined;

function targetOf(pathname: string): Target {
  if (pathname === '/v1' || pathname.startsWith('/v1/'))
    return { kind: 'lifecycle', path: pathname.slice(3) || '/' };
  const sandbox = /^\/(execd|egress)\/([^/]+)(\/.*)?$/.exec(pathname);
  if (!sandbox) return undefined;
  try {
    return {
      kind: sandbox[1] as 'execd' | 'egress',
      sandboxId: decodeURIComponent(sandbox[2]!),
      path: sandbox[3] ?? '/',
    };
  } catch {
    return undefined;
  }
}

/**
 * Starts an OpenSandbox emulator on 127.0.0.1: the lifecycle API under `/v1` (what the SDK's `domain`
 * names) and each sandbox's execd under `/execd/<sandboxId>` (the endpoint of port 44772), on one port.
 * Sandboxes are Docker containers labelled `ws.emulator=opensandbox` and with the emulator's instance;
 * the sandboxes of an earlier emulator of the same instance are taken over. Rejects when the engine does
 * not answer.
 */
export async function startOpenSandboxEmulator(
  options: OpenSandboxEmulatorOptions = {},
): Promise<OpenSandboxEmulator> {
  const log = options.onLog ?? (() => {});
  const limits = resolveLimits(OPENSANDBOX_LIMITS, options.limits, 'opensandbox');
  const unimplemented = new UnimplementedLog('opensandbox', log);
  const docker = dockerClient(options.docker);
  try {
    await docker.ping();
  } catch (error) {
    throw new Error(
      `The OpenSandbox emulator needs a Docker engine, and none answers: ${dockerMessage(error)}`,
      {
        cause: error,
      },
    );
  }
  const instance = options.instance ?? 'default';
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(instance))
    throw new Error(
      `The emulator instance must be 1 to 64 of A-Z a-z 0-9 _ . -, not ${JSON.stringify(instance)}`,
    );
  const apiKeys = options.apiKeys ? new Set(options.apiKeys) : undefined;
  const authorized = (request: IncomingMessage) => {
    const key = request.headers[OPENSANDBOX_API_KEY_HEADER];
    return typeof key === 'string' && key !== '' && (apiKeys === undefined || apiKeys.has(key));
  };
  const registry = new SandboxRegistry({
    docker,
    instance,
    log,
    network: options.network ?? true,
    transitionMs: options.transitionMs ?? 300,
    pidsLimit: limits.processesPerSandbox,
  });
  await registry.restore();
  const context: LifecycleContext = {
    registry,
    docker,
    images: { ...DEFAULT_OPENSANDBOX_IMAGES, ...options.images },
    host: '', // set once the port is known
    limits,
  };
  let handling = 0;

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const started = Date.now();
    const incoming = request.headers['x-request-id'];
    response.setHeader(
      'x-request-id',
      typeof incoming === 'string' && incoming !== '' ? incoming : requestId(),
    );
    response.once('finish', () =>
      log(`${request.method} ${request.url} ${response.statusCode} ${Date.now() - started}ms`),
    );
    const url = new URL(request.url ?? '/', 'http://emulator');
    // uvicorn's `limit_concurrency`: past it, a plain-text 503 before anything else (0: no limit).
    if (limits.concurrentRequests > 0 && handling >= limits.concurrentRequests) {
      request.resume();
      response.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' });
      response.end('Service Unavailable');
      return;
    }
    handling++;
    response.once('close', () => handling--);
    try {
      const target = targetOf(url.pathname);
      if (!target) throw new UnimplementedRequest(`${request.method} ${url.pathname}`);
      if (!authorized(request))
        throw new OpenSandboxHttpError(
          401,
          'UNAUTHORIZED',
          `missing or invalid ${OPENSANDBOX_API_KEY_HEADER} header`,
        );
      if (target.kind === 'lifecycle') {
        await handleLifecycle(context, request, response, target.path, url.searchParams);
        return;
      }
      const record = registry.require(target.sandboxId);
      if (target.kind === 'egress')
        throw new UnimplementedRequest(`${request.method} /egress${target.path}`, 501, 'NOT_IMPLEMENTED');
      await handleExecd(record, request, response, target.path, url.searchParams, limits);
    } catch (error) {
      request.resume();
      if (error instanceof UnimplementedRequest) unimplemented.report(error.what);
      const known =
        error instanceof OpenSandboxHttpError
          ? error
          : new OpenSandboxHttpError(
              dockerStatus(error) === 409 ? 409 : 500,
              'INTERNAL_ERROR',
              dockerMessage(error),
            );
      if (!(error instanceof OpenSandboxHttpError))
        log(`${request.method} ${request.url} failed: ${known.message}`);
      sendOpenSandboxError(response, known);
    }
  };

  const server = createServer((request, response) => void handle(request, response));
  // execd's reverse proxy passes upgraded connections through (WebSocket or any other protocol).
  const upgraded = new Set<Duplex>();
  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    void (async () => {
      const url = new URL(request.url ?? '/', 'http://emulator');
      const target = targetOf(url.pathname);
      const proxied = target?.kind === 'execd' ? proxyTarget(target.path) : undefined;
      if (target?.kind !== 'execd' || !proxied)
        throw new UnimplementedRequest(`${request.method} ${url.pathname} (upgrade)`);
      if (!authorized(request))
        throw new OpenSandboxHttpError(
          401,
          'UNAUTHORIZED',
          `missing or invalid ${OPENSANDBOX_API_KEY_HEADER} header`,
        );
      const record = registry.require(target.sandboxId);
      checkExecdAccess(record, request);
      log(`${request.method} ${request.url} upgrade to ${String(request.headers.upgrade)}`);
      await proxyUpgrade(record, request, socket, head, proxied, url.search);
    })().catch((error: unknown) => {
      if (error instanceof UnimplementedRequest) unimplemented.report(error.what);
      const known =
        error instanceof OpenSandboxHttpError
          ? error
          : new OpenSandboxHttpError(500, 'INTERNAL_ERROR', dockerMessage(error));
      const body = JSON.stringify({ code: known.code, message: known.message });
      socket.end(
        `HTTP/1.1 ${known.status} ${known.code}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    });
  });
  const port = await listenOnLoopback(server, options.port);
  context.host = `127.0.0.1:${options.publicPort ?? port}`;
  const url = `http://${context.host}`;
  const apiKey = options.apiKeys?.[0] ?? DEFAULT_OPENSANDBOX_API_KEY;
  log(`opensandbox: emulator listening on ${url} (${registry.list().length} sandbox(es) restored)`);

  const closeServer = serverCloser(server, () => {
    for (const socket of upgraded) socket.destroy();
    registry.close();
  });
  let closing: Promise<void> | undefined;
  // What was answered 2xx is done before the emulator goes: a client may close it right after.
  const close = () => {
    closing ??= registry.settled().then(closeServer);
    return closing;
  };
  return {
    url,
    apiKey,
    env: { OPEN_SANDBOX_DOMAIN: url, OPEN_SANDBOX_API_KEY: apiKey },
    get unimplemented() {
      return unimplemented.requests;
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}

/**
 * Removes the containers of emulated OpenSandbox sandboxes (label `ws.emulator=opensandbox`), running,
 * paused or not: all of them, or only those of `instance`, and with `metadata` only those created with
 * every given metadata entry. Resolves with the sandbox IDs removed.
 */
export async function removeOpenSandboxEmulatorSandboxes(
  docker?: Docker | Docker.DockerOptions,
  options: { instance?: string; metadata?: Readonly<Record<string, string>> } = {},
): Promise<string[]> {
  const client = dockerClient(docker);
  return removeContainers(client, openSandboxFilter(options.instance), OPENSANDBOX_LABELS.sandboxId, {
    label: OPENSANDBOX_LABELS.metadata,
    entries: options.metadata,
  });
}
