import {
  type Configuration,
  CoreV1Api,
  createConfiguration,
  type KubeConfig,
  NetworkingV1Api,
  type RequestContext,
  type ResponseContext,
  ServerConfiguration,
} from '@kubernetes/client-node';
import { WsError } from '@ws/core';

/** How long one request to the API server may take when `requestTimeoutMs` is not given. */
export const DEFAULT_K8S_REQUEST_TIMEOUT_MS = 30_000;

/**
 * The core API client of `config`, each of whose requests is aborted when it has not completed
 * (answer and body) within `requestTimeoutMs`: a connection that stops forwarding without closing
 * (a stuck proxy or load balancer) fails the call instead of holding it forever. The client's own
 * `makeApiClient` sets no time limit at all.
 */
export function coreApi(config: KubeConfig, requestTimeoutMs: number): CoreV1Api {
  return new CoreV1Api(apiConfiguration(config, requestTimeoutMs));
}

/** The networking API client of `config` (NetworkPolicies), with the same time limit as {@link coreApi}. */
export function networkingApi(config: KubeConfig, requestTimeoutMs: number): NetworkingV1Api {
  return new NetworkingV1Api(apiConfiguration(config, requestTimeoutMs));
}

function apiConfiguration(config: KubeConfig, requestTimeoutMs: number): Configuration {
  const cluster = config.getCurrentCluster();
  if (!cluster)
    throw new WsError('INVALID_ARGUMENT', 'The kubeconfig has no current cluster: set a current context');
  return createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: config },
    promiseMiddleware: [
      {
        pre: async (context: RequestContext) => {
          context.setSignal(AbortSignal.timeout(requestTimeoutMs));
          return context;
        },
        post: async (context: ResponseContext) => context,
      },
    ],
  });
}

/** Whether `error` is a request aborted by its time limit (no other signal reaches the API calls). */
export function isRequestTimeout(error: unknown): boolean {
  return error instanceof Error && error.name === 'AbortError';
}
