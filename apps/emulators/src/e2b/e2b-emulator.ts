import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import Docker from 'dockerode';
import { DEFAULT_E2B_TEMPLATES } from '../default-images.js';
import { dockerMessage } from '../docker/exec.js';
import type { SandboxNetworkOption } from '../docker/network.js';
import { removeContainers } from '../docker/remove-containers.js';
import { HttpError, sendError } from '../http/http-util.js';
import { listenOnLoopback, serverCloser } from '../http/serve.js';
import { UnimplementedLog } from '../http/unimplemented.js';
import { resolveLimits } from '../limits.js';
import { type ControlPlaneContext, handleControlPlane } from './control-plane.js';
import { SANDBOX_ID_HEADER } from './envd-access.js';
import { loadEnvdDescriptors } from './envd-descriptors.js';
import { handleEnvdHttp } from './envd-http.js';
import { registerEnvdServices } from './envd-rpc.js';
import { E2B_CONTAINER_FILTER, E2B_LABELS, instanceFilter } from './labels.js';
import { E2B_LIMITS, type E2BLimits } from './limits.js';
import { RateLimiter } from './rate-limit.js';
import { SandboxRegistry } from './sandbox-registry.js';

/** The envd version the emulator reports; the SDK gates features on it (0.6.4 enables all of 2.51.0's). */
export const EMULATED_ENVD_VERSION = '0.6.4';

/** The API key in `env` when `apiKeys` does not name one. */
export const DEFAULT_E2B_API_KEY = 'e2b_emulator';

/** Options of {@link startE2BEmulator}. */
export interface E2BEmulatorOptions extends SandboxNetworkOption {
  /** TCP port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
  /** A dockerode client (never closed by the emulator) or options for one; default: the local engine. */
  docker?: Docker | Docker.DockerOptions;
  /**
   * Template ID → image. Default {@link DEFAULT_E2B_TEMPLATES}. A template ID that is not here but names
   * an image the engine has also works.
   */
  templates?: Readonly<Record<string, string>>;
  /** The only `X-API-KEY` values accepted; default: any non-empty key. */
  apiKeys?: readonly string[];
  /** Period of `keepalive` events on quiet process streams, in ms (default 50 000, as envd's). */
  keepaliveMs?: number;
  /** Receives one line per lifecycle event and per request. */
  onLog?: (line: string) => void;
  /**
   * The name of this emulator's sandboxes (`[A-Za-z0-9_.-]`, up to 64): an emulator creates, takes
   * over and expires only the containers of its instance, so emulators on one engine (parallel test
   * suites) leave each other's sandboxes alone, and a restarted one finds its own. Default `default`.
   */
  instance?: string;
  /**
   * Changes to E2B's limits the emulator enforces (`E2B_LIMITS`: the base tier's maximum sandbox
   * length `timeoutMaxMs`, running `sandboxes`, `apiRequestsPer30s` per API key, `apiRequestBytes`),
   * so that a test can meet one cheaply. An unknown name or a value that is not a number ≥ 0 rejects.
   */
  limits?: Partial<Record<keyof E2BLimits, number>>;
}

/** A running emulator. `close()` is idempotent and leaves the sandboxes' containers in place. */
export interface E2BEmulator extends AsyncDisposable {
  /** `http://127.0.0.1:<port>`: the REST control plane and envd of every sandbox. */
  url: string;
  /** For the SDK's `apiUrl` option (`E2B_API_URL`). */
  apiUrl: string;
  /** For the SDK's `sandboxUrl` option (`E2B_SANDBOX_URL`). */
  sandboxUrl: string;
  /** `E2B_API_URL`, `E2B_SANDBOX_URL` and `E2B_API_KEY` for the SDK. */
  env: Record<string, string>;
  /**
   * The requests it received and does not implement (`GET /v2/templates`, `rpc process.Process/StreamInput`),
   * oldest first; each is also logged as `e2b: unimplemented …`.
   */
  readonly unimplemented: readonly string[];
  /** Stops serving; resolves once the kills and pauses it accepted are done (30 s at most). */
  close(): Promise<void>;
}

/** Host figures reported as each sandbox's CPU count and memory (containers run without limits). */
async function hostResources(docker: Docker): Promise<{ cpuCount: number; memoryMB: number }> {
  try {
    const info = (await docker.info()) as { NCPU?: number; MemTotal?: number };
    return { cpuCount: info.NCPU ?? 1, memoryMB: Math.floor((info.MemTotal ?? 0) / (1024 * 1024)) };
  } catch {
    return { cpuCount: 1, memoryMB: 0 };
  }
}

function dockerClient(docker: E2BEmulatorOptions['docker']): Docker {
  return docker instanceof Docker ? docker : new Docker(docker);
}

/**
 * Starts an E2B emulator on 127.0.0.1: the control plane (`/v2/sandboxes`, `/sandboxes/{id}/…`) and
 * envd (Connect RPC `process.Process` / `filesystem.Filesystem`, `/files`, `/health`; chosen by the
 * `E2b-Sandbox-Id` header) on one port. Sandboxes are Docker containers labelled `ws.emulator=e2b` and
 * with the emulator's instance; the sandboxes of an earlier emulator of the same instance are taken over. Rejects when the engine does not answer or the
 * installed `e2b` bundle has no envd descriptors.
 */
export async function startE2BEmulator(options: E2BEmulatorOptions = {}): Promise<E2BEmulator> {
  const log = options.onLog ?? (() => {});
  const limits = resolveLimits(E2B_LIMITS, options.limits, 'e2b');
  const unimplemented = new UnimplementedLog('e2b', log);
  const descriptors = loadEnvdDescriptors();
  const docker = dockerClient(options.docker);
  try {
    await docker.ping();
  } catch (error) {
    throw new Error(`The E2B emulator needs a Docker engine, and none answers: ${dockerMessage(error)}`, {
      cause: error,
    });
  }
  const instance = options.instance ?? 'default';
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(instance))
    throw new Error(
      `The emulator instance must be 1 to 64 of A-Z a-z 0-9 _ . -, not ${JSON.stringify(instance)}`,
    );
  const registry = new SandboxRegistry(docker, log, instance, options.network ?? true);
  await registry.restore();
  const context: ControlPlaneContext = {
    registry,
    docker,
    templates: { ...DEFAULT_E2B_TEMPLATES, ...options.templates },
    apiKeys: options.apiKeys ? new Set(options.apiKeys) : undefined,
    envdVersion: EMULATED_ENVD_VERSION,
    resources: await hostResources(docker),
    limits,
    rateLimiter: new RateLimiter(limits.apiRequestsPer30s, 30_000),
    unimplemented,
  };
  const rpc = connectNodeAdapter({
    routes: (router) =>
      registerEnvdServices(router, descriptors, {
        registry,
        keepaliveMs: options.keepaliveMs ?? 50_000,
        unimplemented,
      }),
    grpc: false,
    grpcWeb: false,
    jsonOptions: { ignoreUnknownFields: true },
    fallback: (request, response) => {
      unimplemented.report(`${request.method} ${new URL(request.url ?? '/', 'http://emulator').pathname}`);
      request.resume();
      sendError(response as ServerResponse, 404, `${request.url} is not part of the emulated envd`);
    },
  });

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const started = Date.now();
    response.once('finish', () =>
      log(`${request.method} ${request.url} ${response.statusCode} ${Date.now() - started}ms`),
    );
    try {
      if (request.headers[SANDBOX_ID_HEADER] !== undefined) {
        if (!(await handleEnvdHttp(registry, request, response, unimplemented))) rpc(request, response);
        return;
      }
      await handleControlPlane(context, request, response);
    } catch (error) {
      request.resume();
      if (error instanceof HttpError) {
        sendError(response, error.status, error.message);
        return;
      }
      log(`${request.method} ${request.url} failed: ${dockerMessage(error)}`);
      sendError(response, 500, dockerMessage(error));
    }
  };
  const server = createServer((request, response) => void handle(request, response));
  const port = await listenOnLoopback(server, options.port);
  const url = `http://127.0.0.1:${port}`;
  log(`e2b: emulator listening on ${url} (${registry.list().length} sandbox(es) restored)`);

  const closeServer = serverCloser(server, () => {
    registry.close();
  });
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= closeServer().then(() => registry.settle());
    return closing;
  };
  return {
    url,
    apiUrl: url,
    sandboxUrl: url,
    env: {
      E2B_API_URL: url,
      E2B_SANDBOX_URL: url,
      E2B_API_KEY: options.apiKeys?.[0] ?? DEFAULT_E2B_API_KEY,
    },
    get unimplemented() {
      return unimplemented.requests;
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}

/**
 * Removes the containers of emulated E2B sandboxes (label `ws.emulator=e2b`), of any emulator, running
 * or not: all of them, or only those of `instance`, and with `metadata` only those whose metadata holds
 * every given pair. Resolves with the sandbox IDs removed.
 */
export async function removeEmulatorSandboxes(
  docker?: Docker | Docker.DockerOptions,
  options: { metadata?: Readonly<Record<string, string>>; instance?: string } = {},
): Promise<string[]> {
  const client = dockerClient(docker);
  const label = [
    ...(options.instance !== undefined ? instanceFilter(options.instance) : E2B_CONTAINER_FILTER).label,
    ...Object.entries(options.metadata ?? {}).map(
      ([key, value]) => `${E2B_LABELS.metadataPrefix}${key}=${value}`,
    ),
  ];
  return removeContainers(client, { label }, E2B_LABELS.sandboxId);
}
