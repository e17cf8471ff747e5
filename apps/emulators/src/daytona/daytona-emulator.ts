import { createServer, type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import Docker from 'dockerode';
import { WebSocketServer } from 'ws';
import { DEFAULT_DAYTONA_SNAPSHOTS } from '../default-images.js';
import { dockerMessage } from '../docker/exec.js';
import type { SandboxNetworkOption } from '../docker/network.js';
import { removeContainers } from '../docker/remove-containers.js';
import { listenOnLoopback, serverCloser } from '../http/serve.js';
import { UnimplementedLog } from '../http/unimplemented.js';
import { resolveLimits } from '../limits.js';
import { type ControlPlaneContext, dto, handleControlPlane } from './control-plane.js';
import { DaytonaHttpError, sendApiError, sendToolboxError, UnimplementedRequest } from './errors.js';
import { EVENTS_PATH, EventStream } from './events.js';
import { DAYTONA_LABELS, daytonaFilter } from './labels.js';
import { DAYTONA_LIMITS, type DaytonaLimits } from './limits.js';
import { RateLimiter } from './rate-limits.js';
import { SandboxRegistry } from './sandbox-registry.js';
import { handleToolbox, upgradeLogs } from './toolbox.js';

export { DAYTONA_LABELS } from './labels.js';

/** The API key in `env` when `apiKeys` does not name one. */
export const DEFAULT_DAYTONA_API_KEY = 'daytona_emulator';

/** Options of {@link startDaytonaEmulator}. */
export interface DaytonaEmulatorOptions extends SandboxNetworkOption {
  /** TCP port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
  /**
   * The port clients reach the emulator on, when a proxy on 127.0.0.1 stands in front of it: every
   * URL the emulator hands out (its own, each sandbox's toolbox) names this port. Default: its own.
   */
  publicPort?: number;
  /** A dockerode client (never closed by the emulator) or options for one; default: the local engine. */
  docker?: Docker | Docker.DockerOptions;
  /**
   * Snapshot name → image, merged over {@link DEFAULT_DAYTONA_SNAPSHOTS}; the first name is the snapshot
   * of a create request that names none. A name that is not here but names an image the engine has
   * also works.
   */
  snapshots?: Readonly<Record<string, string>>;
  /** The only `Authorization: Bearer` keys accepted; default: any non-empty key. */
  apiKeys?: readonly string[];
  /**
   * The name of this emulator's sandboxes (`[A-Za-z0-9_.-]`, up to 64): an emulator creates, takes
   * over and stops only the containers of its instance. Default `default`.
   */
  instance?: string;
  /** How long creating, starting, stopping, archiving and destroying last at least, in ms (default 300). */
  transitionMs?: number;
  /** The length of a minute of the auto-stop/archive/delete intervals, in ms (default 60 000; for tests). */
  minuteMs?: number;
  /**
   * The service's limits to enforce instead of its defaults ({@link DAYTONA_LIMITS}: quotas answered
   * 400 on create and start, rate limits answered 429 with `Retry-After-<throttler>`), so that a test
   * meets one without creating ten sandboxes or sending ten thousand requests. An unknown name or a
   * value that is not a number ≥ 0 throws.
   */
  limits?: Partial<Record<keyof DaytonaLimits, number>>;
  /** Receives one line per lifecycle event and per request. */
  onLog?: (line: string) => void;
}

/** A running emulator. `close()` is idempotent and leaves the sandboxes' containers in place. */
export interface DaytonaEmulator extends AsyncDisposable {
  /** The SDK's `apiUrl` (`DAYTONA_API_URL`): `http://127.0.0.1:<port>/api`. */
  url: string;
  /** The same as `url`. */
  apiUrl: string;
  /** Every sandbox's `toolboxProxyUrl`: `http://127.0.0.1:<port>/toolbox`. */
  toolboxUrl: string;
  /** A key the emulator accepts. */
  apiKey: string;
  /** `DAYTONA_API_URL` and `DAYTONA_API_KEY` for the SDK. */
  env: Record<string, string>;
  /**
   * The requests it received and does not implement (`GET /api/snapshots`, `POST /toolbox/<id>/git/clone`,
   * an unknown WebSocket path), oldest first, each also logged as `daytona: unimplemented …`.
   */
  readonly unimplemented: readonly string[];
  /**
   * Stops serving; resolves once the stops, archives and deletions it accepted are done (30 s at most),
   * so that a sandbox it answered as deleted leaves no container.
   */
  close(): Promise<void>;
}

/** How long `close()` waits for accepted stops and deletions. */
const SETTLE_MS = 30_000;

function dockerClient(docker: DaytonaEmulatorOptions['docker']): Docker {
  return docker instanceof Docker ? docker : new Docker(docker);
}

function bearer(request: IncomingMessage): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  return match?.[1];
}

type Target =
  | { kind: 'api'; path: string }
  | { kind: 'toolbox'; sandboxId: string; path: string }
  | undefined;

function targetOf(request: IncomingMessage): Target {
  const pathname = new URL(request.url ?? '/', 'http://emulator').pathname;
  if (pathname === '/api' || pathname.startsWith('/api/'))
    return { kind: 'api', path: pathname.slice(4) || '/' };
  const toolbox = /^\/toolbox\/([^/]+)(\/.*)?$/.exec(pathname);
  if (!toolbox) return undefined;
  let sandboxId: string;
  try {
    sandboxId = decodeURIComponent(toolbox[1]!);
  } catch {
    return undefined;
  }
  return { kind: 'toolbox', sandboxId, path: toolbox[2] ?? '/' };
}

/**
 * Starts a Daytona emulator on 127.0.0.1: the control plane under `/api` (what the SDK's `apiUrl` names)
 * and the toolbox of every sandbox under `/toolbox/<sandboxId>` (its `toolboxProxyUrl`), on one port.
 * Sandboxes are Docker containers labelled `ws.emulator=daytona` and with the emulator's instance; the
 * sandboxes of an earlier emulator of the same instance are taken over. Rejects when the engine does
 * not answer.
 */
export async function startDaytonaEmulator(options: DaytonaEmulatorOptions = {}): Promise<DaytonaEmulator> {
  const log = options.onLog ?? (() => {});
  const limits = resolveLimits(DAYTONA_LIMITS, options.limits, 'daytona');
  const unimplemented = new UnimplementedLog('daytona', log);
  const docker = dockerClient(options.docker);
  try {
    await docker.ping();
  } catch (error) {
    throw new Error(`The Daytona emulator needs a Docker engine, and none answers: ${dockerMessage(error)}`, {
      cause: error,
    });
  }
  const instance = options.instance ?? 'default';
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(instance))
    throw new Error(
      `The emulator instance must be 1 to 64 of A-Z a-z 0-9 _ . -, not ${JSON.stringify(instance)}`,
    );
  const apiKeys = options.apiKeys ? new Set(options.apiKeys) : undefined;
  const accepted = (key: string | undefined) =>
    key !== undefined && key !== '' && (apiKeys === undefined || apiKeys.has(key));
  const authorized = (request: IncomingMessage) => accepted(bearer(request));
  const webSockets = new WebSocketServer({ noServer: true });
  const events = new EventStream(webSockets, accepted);
  const registry = new SandboxRegistry({
    docker,
    instance,
    log,
    network: options.network ?? true,
    transitionMs: options.transitionMs ?? 300,
    minuteMs: options.minuteMs ?? 60_000,
    onStateChange: (record, oldState, newState) =>
      events.emit('sandbox.state.updated', {
        sandbox: { ...dto(context, record), state: newState },
        oldState,
        newState,
      }),
  });
  await registry.restore();
  const context: ControlPlaneContext = {
    registry,
    docker,
    snapshots: { ...options.snapshots, ...DEFAULT_DAYTONA_SNAPSHOTS, ...options.snapshots },
    toolboxUrl: '', // set once the port is known
    limits,
    rates: new RateLimiter(limits),
  };
  const pathOf = (request: IncomingMessage) => new URL(request.url ?? '/', 'http://emulator').pathname;

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const started = Date.now();
    response.once('finish', () =>
      log(`${request.method} ${request.url} ${response.statusCode} ${Date.now() - started}ms`),
    );
    const target = targetOf(request);
    try {
      if (!target) throw new UnimplementedRequest(404, `Cannot ${request.method} ${request.url}`);
      if (!authorized(request)) throw new DaytonaHttpError(401, 'Unauthorized', 'UNAUTHORIZED');
      if (target.kind === 'api') await handleControlPlane(context, request, response, target.path);
      else await handleToolbox(registry, request, response, target.sandboxId, target.path);
    } catch (error) {
      request.resume();
      const known =
        error instanceof DaytonaHttpError ? error : new DaytonaHttpError(500, dockerMessage(error));
      if (error instanceof UnimplementedRequest) unimplemented.report(`${request.method} ${pathOf(request)}`);
      if (!(error instanceof DaytonaHttpError))
        log(`${request.method} ${request.url} failed: ${known.message}`);
      if (target?.kind === 'toolbox')
        sendToolboxError(request, response, known.status, known.message, known.code);
      else sendApiError(request, response, known);
    }
  };

  const upgrade = (request: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const target = targetOf(request);
    try {
      if (target?.kind === 'api' && target.path === EVENTS_PATH) {
        events.upgrade(request, socket, head); // the key comes in the Socket.IO connect packet
        log(`GET ${request.url} (websocket)`);
        return;
      }
      if (target?.kind !== 'toolbox') throw new UnimplementedRequest(404, `${request.url} has no WebSocket`);
      if (!authorized(request)) throw new DaytonaHttpError(401, 'Unauthorized');
      upgradeLogs(registry, webSockets, request, socket, head, target.sandboxId, target.path);
      log(`GET ${request.url} (websocket)`);
    } catch (error) {
      const status = error instanceof DaytonaHttpError ? error.status : 500;
      const message = (error as Error).message;
      if (error instanceof UnimplementedRequest) unimplemented.report(`GET ${pathOf(request)} (websocket)`);
      log(`GET ${request.url} (websocket) ${status}: ${message}`);
      socket.end(
        `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n${message}`,
      );
    }
  };

  const server = createServer((request, response) => void handle(request, response));
  server.on('upgrade', upgrade);
  const port = await listenOnLoopback(server, options.port);
  const origin = `http://127.0.0.1:${options.publicPort ?? port}`;
  context.toolboxUrl = `${origin}/toolbox`;
  const apiUrl = `${origin}/api`;
  const apiKey = options.apiKeys?.[0] ?? DEFAULT_DAYTONA_API_KEY;
  log(`daytona: emulator listening on ${apiUrl} (${registry.list().length} sandbox(es) restored)`);

  const closeServer = serverCloser(server, () => {
    registry.close();
    events.close();
    for (const client of webSockets.clients) client.terminate();
    webSockets.close();
  });
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= closeServer().then(() => registry.settle(SETTLE_MS));
    return closing;
  };
  return {
    url: apiUrl,
    apiUrl,
    toolboxUrl: context.toolboxUrl,
    apiKey,
    env: { DAYTONA_API_URL: apiUrl, DAYTONA_API_KEY: apiKey },
    get unimplemented() {
      return unimplemented.requests;
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}

/**
 * Removes the containers of emulated Daytona sandboxes (label `ws.emulator=daytona`), running or not:
 * all of them, or only those of `instance`, and with `labels` only those created with every given
 * label. Resolves with the sandbox IDs removed.
 */
export async function removeDaytonaEmulatorSandboxes(
  docker?: Docker | Docker.DockerOptions,
  options: { instance?: string; labels?: Readonly<Record<string, string>> } = {},
): Promise<string[]> {
  const client = dockerClient(docker);
  return removeContainers(client, daytonaFilter(options.instance), DAYTONA_LABELS.sandboxId, {
    label: DAYTONA_LABELS.labels,
    entries: options.labels,
  });
}
