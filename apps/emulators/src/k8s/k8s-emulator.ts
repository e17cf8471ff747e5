import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { DEFAULT_K8S_IMAGES } from '../default-images.js';
import { dockerMessage, dockerStatus } from '../docker/exec.js';
import type { SandboxNetworkOption } from '../docker/network.js';
import { listenOnLoopback, serverCloser } from '../http/serve.js';
import { UnimplementedLog } from '../http/unimplemented.js';
import { resolveLimits } from '../limits.js';
import { type ApiContext, handleRequest, handleUpgrade } from './api-server.js';
import { Completions } from './completions.js';
import { execWebSocketServer } from './exec-websocket.js';
import { k8sFilter, ResourceVersions } from './labels.js';
import { K8S_LIMITS, type K8sLimits } from './limits.js';
import { NamespaceStore } from './namespaces.js';
import { NetworkPolicyStore } from './network-policies.js';
import { PodStore } from './pods.js';
import { PvcStore } from './pvcs.js';

export { K8S_LABELS } from './labels.js';

/** Options of {@link startK8sEmulator}. */
export interface K8sEmulatorOptions extends SandboxNetworkOption {
  /** TCP port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
  /** A dockerode client (never closed by the emulator) or options for one; default: the local engine. */
  docker?: Docker | Docker.DockerOptions;
  /** The only bearer token accepted; default: a random one. */
  token?: string;
  /**
   * The name of this emulator's objects (`[a-z0-9_.-]`, up to 40): an emulator creates, takes over and
   * removes only the pods, claims and namespaces of its instance. Default `default`.
   */
  instance?: string;
  /** Pod image names → engine images, merged over {@link DEFAULT_K8S_IMAGES}; other names are used as is. */
  images?: Readonly<Record<string, string>>;
  /** Where to write the kubeconfig (mode 0600); default: a temporary file removed by `close()`. */
  kubeconfigPath?: string;
  /** Receives one line per lifecycle event and per request. */
  onLog?: (line: string) => void;
  /**
   * The API server's and the node's limits to enforce instead of the real defaults (`K8S_LIMITS`:
   * `requestBodyBytes`, `requestsInFlight`, `mutatingRequestsInFlight`, `podsPerNode`, `nameChars`,
   * `labelValueChars`, `annotationsBytes`), e.g. `{ podsPerNode: 1 }`. An unknown name throws.
   */
  limits?: Partial<Record<keyof K8sLimits, number>>;
}

/** How long `close()` waits for accepted deletions (Pods' containers, claims' volumes) to complete, in ms. */
const COMPLETION_WAIT_MS = 30_000;

/** `KubeConfig.loadFromOptions` input for the emulator (plain HTTP needs `skipTLSVerify`). */
export interface K8sKubeConfigOptions {
  /** The one cluster: the emulator's API server. */
  clusters: {
    /** The cluster's name (`ws-emulator`). */
    name: string;
    /** The API server's URL: `http://127.0.0.1:<port>`. */
    server: string;
    /** Always true: the server speaks plain HTTP. */
    skipTLSVerify: boolean;
  }[];
  /** The one user, holding the emulator's token. */
  users: {
    /** The user's name (`ws-emulator`). */
    name: string;
    /** The bearer token the emulator accepts. */
    token: string;
  }[];
  /** The one context, joining the cluster and the user. */
  contexts: {
    /** The context's name (`ws-emulator`). */
    name: string;
    /** The cluster's name. */
    cluster: string;
    /** The user's name. */
    user: string;
    /** The default namespace (`default`). */
    namespace: string;
  }[];
  /** The context in use (`ws-emulator`). */
  currentContext: string;
}

/** A running emulator. `close()` is idempotent and leaves the pods' containers and volumes in place. */
export interface K8sEmulator extends AsyncDisposable {
  /** The API server: `http://127.0.0.1:<port>`. */
  url: string;
  /** The bearer token the emulator accepts. */
  token: string;
  /** A kubeconfig (YAML) naming the server, the token and context `ws-emulator`. */
  kubeconfig: string;
  /** The file holding {@link kubeconfig} (`KUBECONFIG`). */
  kubeconfigPath: string;
  /** `KUBECONFIG`, `K8S_API_URL` and `K8S_TOKEN` for a client. */
  env: Record<string, string>;
  /** A fresh copy of the kubeconfig, for `KubeConfig.loadFromOptions`. */
  loadKubeConfig(): K8sKubeConfigOptions;
  /**
   * The requests it received and does not implement (`PUT /api/v1/namespaces/default/pods/x`, an
   * unknown path, a watch of anything but pods), oldest first; each is also logged as
   * `k8s: unimplemented …`.
   */
  readonly unimplemented: readonly string[];
  /**
   * Stops serving, then waits (up to 30 s) for the deletions it accepted to complete (a deleted
   * Pod's container removed, a deleted claim's volume once no Pod uses it), as a cluster finishes
   * them. Idempotent; the Pods' containers and volumes that were not deleted stay.
   */
  close(): Promise<void>;
}

function dockerClient(docker: K8sEmulatorOptions['docker']): Docker {
  return docker instanceof Docker ? docker : new Docker(docker);
}

function kubeconfigOf(options: K8sKubeConfigOptions): string {
  const cluster = options.clusters[0]!;
  const user = options.users[0]!;
  const context = options.contexts[0]!;
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: ${cluster.name}`,
    '  cluster:',
    `    server: ${JSON.stringify(cluster.server)}`,
    '    insecure-skip-tls-verify: true',
    'users:',
    `- name: ${user.name}`,
    '  user:',
    `    token: ${JSON.stringify(user.token)}`,
    'contexts:',
    `- name: ${context.name}`,
    '  context:',
    `    cluster: ${context.cluster}`,
    `    user: ${context.user}`,
    `    namespace: ${context.namespace}`,
    `current-context: ${options.currentContext}`,
    '',
  ].join('\n');
}

/**
 * Starts a Kubernetes API emulator on 127.0.0.1: namespaces, pods (Docker containers), PVCs (Docker
 * named volumes), NetworkPolicies (a pod denied all egress at its creation gets no network) and pod exec over WebSocket (v5/v4 channel protocols), with bearer-token auth. Objects
 * of an earlier emulator of the same instance are taken over. Rejects when the engine does not answer.
 */
export async function startK8sEmulator(options: K8sEmulatorOptions = {}): Promise<K8sEmulator> {
  const log = options.onLog ?? (() => {});
  const docker = dockerClient(options.docker);
  try {
    await docker.ping();
  } catch (error) {
    throw new Error(
      `The Kubernetes emulator needs a Docker engine, and none answers: ${dockerMessage(error)}`,
      {
        cause: error,
      },
    );
  }
  const instance = options.instance ?? 'default';
  // Volume and container names embed the instance, so it keeps to what Docker names allow.
  if (!/^[a-z0-9][a-z0-9_.-]{0,39}$/.test(instance))
    throw new Error(
      `The emulator instance must be 1 to 40 of a-z 0-9 _ . - (starting alphanumeric), not ${JSON.stringify(instance)}`,
    );
  const token = options.token ?? randomBytes(24).toString('base64url');
  if (!/^\S+$/.test(token)) throw new Error('The emulator token must be non-empty and have no spaces');
  const limits: K8sLimits = resolveLimits(K8S_LIMITS, options.limits, 'k8s');
  const unimplemented = new UnimplementedLog('k8s', log);
  const completions = new Completions();
  const track = <T>(work: Promise<T>): Promise<T> => completions.track(work);
  const versions = new ResourceVersions();
  const base = { docker, instance, versions, log, limits, track };
  const namespaces = new NamespaceStore(base);
  const networkPolicies = new NetworkPolicyStore(base);
  let pods: PodStore | undefined;
  const pvcs = new PvcStore({ ...base, inUse: (namespace, claim) => pods?.inUse(namespace, claim) ?? true });
  pods = new PodStore({
    ...base,
    network: options.network ?? true,
    images: { ...DEFAULT_K8S_IMAGES, ...options.images },
    pvcs,
    egressOf: (namespace, labels) => networkPolicies.egressOf(namespace, labels),
    onGone: () =>
      void track(pvcs.reap()).catch((error: unknown) => log(`k8s: reap failed: ${dockerMessage(error)}`)),
    track,
  });
  namespaces.pods = pods;
  namespaces.pvcs = pvcs;
  namespaces.networkPolicies = networkPolicies;
  await namespaces.restore();
  await networkPolicies.restore();
  await pvcs.restore();
  await pods.restore();
  const webSockets = execWebSocketServer();
  const context: ApiContext = {
    token,
    namespaces,
    pods,
    pvcs,
    networkPolicies,
    versions,
    webSockets,
    log,
    unimplemented,
    limits,
    inFlight: { all: 0, mutating: 0 },
  };
  const server = createServer((request, response) => void handleRequest(context, request, response));
  server.on('upgrade', (request, socket, head) => handleUpgrade(context, request, socket, head));
  const stop = serverCloser(server, () => {
    pods.close();
    for (const client of webSockets.clients) client.terminate();
    webSockets.close();
  });
  const url = `http://127.0.0.1:${await listenOnLoopback(server, options.port)}`;
  const kubeOptions: K8sKubeConfigOptions = {
    clusters: [{ name: 'ws-emulator', server: url, skipTLSVerify: true }],
    users: [{ name: 'ws-emulator', token }],
    contexts: [{ name: 'ws-emulator', cluster: 'ws-emulator', user: 'ws-emulator', namespace: 'default' }],
    currentContext: 'ws-emulator',
  };
  const kubeconfig = kubeconfigOf(kubeOptions);
  const ownDirectory = options.kubeconfigPath ? undefined : await mkdtemp(join(tmpdir(), 'ws-k8s-emulator-'));
  const kubeconfigPath = options.kubeconfigPath ?? join(ownDirectory!, 'kubeconfig');
  await writeFile(kubeconfigPath, kubeconfig, { mode: 0o600 });
  log(`k8s: emulator listening on ${url} (instance ${instance}, kubeconfig ${kubeconfigPath})`);

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      await stop();
      await completions.settle(COMPLETION_WAIT_MS);
      if (ownDirectory) await rm(ownDirectory, { recursive: true, force: true });
    })();
    return closing;
  };
  return {
    url,
    token,
    kubeconfig,
    kubeconfigPath,
    env: { KUBECONFIG: kubeconfigPath, K8S_API_URL: url, K8S_TOKEN: token },
    loadKubeConfig: () => structuredClone(kubeOptions),
    get unimplemented() {
      return unimplemented.requests;
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}

/**
 * Removes the emulator's Docker objects (label `ws.emulator=k8s`): pod containers (forced), then PVC
 * and namespace volumes; all of them, or only those of `instance`. Resolves with how many went.
 */
export async function removeK8sEmulatorObjects(
  docker?: Docker | Docker.DockerOptions,
  options: { instance?: string } = {},
): Promise<{
  /** How many pod containers were removed. */
  containers: number;
  /** How many PVC and namespace volumes were removed. */
  volumes: number;
}> {
  const client = dockerClient(docker);
  const removed = { containers: 0, volumes: 0 };
  const containers = await client.listContainers({ all: true, filters: k8sFilter(options.instance) });
  for (const summary of containers) {
    try {
      await client.getContainer(summary.Id).remove({ force: true, v: true });
      removed.containers++;
    } catch (error) {
      if (dockerStatus(error) !== 404) throw error;
    }
  }
  const { Volumes } = await client.listVolumes({ filters: k8sFilter(options.instance) });
  for (const volume of Volumes ?? []) {
    try {
      await client.getVolume(volume.Name).remove();
      removed.volumes++;
    } catch (error) {
      if (dockerStatus(error) !== 404) throw error;
    }
  }
  return removed;
}
