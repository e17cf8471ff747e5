import type { KubeConfig, V1ResourceRequirements, V1Toleration } from '@kubernetes/client-node';
import type { CommonWorkspaceOptions, SandboxPolicyOptions } from '@ws/core';
import { WsError } from '@ws/core';
import {
  checkUserLabels,
  type OptionKeys,
  type OwnOptions,
  POLICY_KEYS,
  splitOptions,
  WorkspaceEngine,
  type WorkspaceRequester,
} from '@ws/core/backend';
import { DEFAULT_K8S_REQUEST_TIMEOUT_MS } from './api.js';
import { K8sProvider } from './k8s-provider.js';
import { isLabelValue, MANAGED_BY_LABEL } from './names.js';
import { resolvePodPolicy } from './pod-policy.js';

/** The Pod image when none is given: any image with `sh` works; `node` 18+ adds the gateway and MCP. */
export const DEFAULT_K8S_IMAGE = 'node:22-bookworm-slim';
/** How long `initialize()` waits for the Pod to run when `startTimeoutMs` is not given. */
export const DEFAULT_K8S_START_TIMEOUT_MS = 120_000;

/**
 * Options of {@link K8sWorkspace}. The sandbox policy: `limits.cpus`, `memoryMiB` and `diskMiB` are
 * the container's `cpu`, `memory` and `ephemeral-storage` limits (`limits.pids` is refused: a Pod has
 * no process limit in the API); `network: 'none'` or an allow list of addresses and CIDR blocks is a
 * NetworkPolicy of the workspace's own, which only a network plugin that enforces NetworkPolicies
 * holds (host names are refused); `privileges: 'hardened'` (the default) drops every capability and
 * forbids gaining one, `'standard'` leaves the container runtime's default capabilities.
 */
export interface K8sWorkspaceOptions extends CommonWorkspaceOptions, SandboxPolicyOptions {
  /**
   * A kubeconfig file's path, or a loaded `KubeConfig` (used as it is, never changed). Default: the
   * client's usual lookup (`KUBECONFIG`, `~/.kube/config`, else the in-cluster service account).
   */
  kubeconfig?: string | KubeConfig;
  /** The namespace of the Pod and PVC; created when missing (if allowed). Default: the context's, else `default`. */
  namespace?: string;
  /** The Pod's image. Default: {@link DEFAULT_K8S_IMAGE}. */
  image?: string;
  /** The container's `imagePullPolicy`. Default: the cluster's. */
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  /** Names of Secrets to pull the image with. */
  imagePullSecrets?: readonly string[];
  /** The PVC's requested size (a quantity: `1Gi`, `500Mi`). Default: `1Gi`. */
  storageSize?: string;
  /** The PVC's storage class. Default: the cluster's default class. */
  storageClassName?: string;
  /** Delete the PVC (the files) on `close()` too. Default: false (`destroy()` deletes it). */
  deletePvcOnClose?: boolean;
  /**
   * The container's resource requests and limits (`{ limits: { cpu: '1', memory: '1Gi' } }`); the
   * `limits` option adds to these (one limit given in both is refused).
   */
  resources?: V1ResourceRequirements;
  /** Variables of the Pod's container, seen by every command. */
  env?: Readonly<Record<string, string>>;
  /** Labels added to the Pod and PVC (the workspace's own `ws.*` labels cannot be set). */
  labels?: Readonly<Record<string, string>>;
  /** The Pod's node selector. */
  nodeSelector?: Readonly<Record<string, string>>;
  /** The Pod's tolerations. */
  tolerations?: readonly V1Toleration[];
  /**
   * The Pod's service account. Without one the Pod gets no API token (the agent inside cannot call
   * the API); with one, its token is mounted as usual.
   */
  serviceAccount?: string;
  /**
   * How long `initialize()` waits for the Pod to run (image pulled, scheduled, started), in
   * milliseconds. Default: {@link DEFAULT_K8S_START_TIMEOUT_MS}. (A Pod has no time limit of its own:
   * it runs until `close()`; `gcK8s` removes the ones hosts left behind.)
   */
  startTimeoutMs?: number;
  /**
   * How long one request to the API server may take (answer and body), and an exec connection to
   * open, in milliseconds: a connection that stops forwarding without closing fails the call with
   * `BACKEND_UNAVAILABLE` instead of holding it. Default: {@link DEFAULT_K8S_REQUEST_TIMEOUT_MS}.
   */
  requestTimeoutMs?: number;
  /** Owner tag on the Pod and PVC (`ws.owner`), for reaping. Default: `ws`. */
  owner?: string;
  /** Start the gateway when the image has node 18 or newer. Default: true. */
  gateway?: boolean;
  /**
   * Who commands, file operations and the gateway run as: `uid` or `uid:gid`, the container's
   * `securityContext.runAsUser` and `runAsGroup`; the Pod's `fsGroup` is the gid (else the uid), so
   * that the workspace volume is writable by that user. A name is refused (`INVALID_ARGUMENT`): the
   * API takes numeric ids only. Default: the image's user. Fixed when the Pod is created: a running
   * Pod found by name that runs as another user is refused with `CONFLICT`.
   */
  user?: string;
  /**
   * Who the Pod and claim are opened for, put in their annotations as `ws.user`, `ws.agent` and
   * `ws.session` (`ws ls` shows them). A `WorkspaceManager` with {@link k8sWorkspaces} passes its
   * request's.
   */
  requester?: WorkspaceRequester;
}

const K8S_KEYS: OptionKeys<K8sWorkspaceOptions> = {
  kubeconfig: true,
  namespace: true,
  image: true,
  imagePullPolicy: true,
  imagePullSecrets: true,
  storageSize: true,
  storageClassName: true,
  deletePvcOnClose: true,
  resources: true,
  env: true,
  labels: true,
  nodeSelector: true,
  tolerations: true,
  serviceAccount: true,
  startTimeoutMs: true,
  requestTimeoutMs: true,
  owner: true,
  gateway: true,
  user: true,
  requester: true,
  ...POLICY_KEYS,
};

/** Options this class refuses on purpose, with what to use instead. */
const K8S_HINTS = {
  timeoutMs:
    'a Pod has no time limit (it runs until close(); gcK8s removes the ones hosts left behind); the wait for it to run is "startTimeoutMs"',
};

const QUANTITY = /^\d+(\.\d+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
function invalid(message: string, details: Record<string, unknown>): WsError {
  return new WsError('INVALID_ARGUMENT', message, { details });
}

function checkOptions(options: OwnOptions<K8sWorkspaceOptions>): void {
  const { startTimeoutMs, requestTimeoutMs, storageSize, namespace, owner, labels, env } = options;
  if (startTimeoutMs !== undefined && (!Number.isInteger(startTimeoutMs) || startTimeoutMs < 1_000))
    throw invalid(`startTimeoutMs must be a whole number of at least 1 000, not ${startTimeoutMs}`, {
      startTimeoutMs,
    });
  if (requestTimeoutMs !== undefined && (!Number.isInteger(requestTimeoutMs) || requestTimeoutMs < 1_000))
    throw invalid(`requestTimeoutMs must be a whole number of at least 1 000, not ${requestTimeoutMs}`, {
      requestTimeoutMs,
    });
  if (storageSize !== undefined && !QUANTITY.test(storageSize))
    throw invalid(`storageSize must be a quantity such as 1Gi, not ${JSON.stringify(storageSize)}`, {
      storageSize,
    });
  if (namespace !== undefined && !DNS_LABEL.test(namespace))
    throw invalid(`namespace ${JSON.stringify(namespace)} is not a valid namespace name`, { namespace });
  if (owner !== undefined && (owner === '' || !isLabelValue(owner)))
    throw invalid(`owner ${JSON.stringify(owner)} is not a valid label value`, { owner });
  checkUserLabels(labels, 'Label');
  if (labels?.[MANAGED_BY_LABEL] !== undefined)
    throw invalid(`The label ${MANAGED_BY_LABEL} is the workspace's own`, { keys: [MANAGED_BY_LABEL] });
  for (const [key, value] of Object.entries(labels ?? {})) {
    if (!isLabelValue(value))
      throw invalid(`The value of label ${key} is not a valid label value`, { label: key });
  }
  for (const name of Object.keys(env ?? {}))
    if (!ENV_NAME.test(name))
      throw invalid(`${JSON.stringify(name)} is not an environment variable name`, { name });
}

/**
 * A workspace in a Kubernetes Pod with its files on a PersistentVolumeClaim, through
 * `@kubernetes/client-node`. The Pod and the PVC are named after the workspace id and labelled with
 * it; a Pod deleted from outside is created again by the next `initialize()`, with the files of the
 * PVC. `close()` deletes the Pod and keeps the PVC; `destroy()` deletes both. Tool calls and MCP go
 * through the in-Pod gateway, reached over one exec's stdin and stdout.
 */
export class K8sWorkspace extends WorkspaceEngine<K8sProvider> {
  /**
   * Checks the options and does no I/O: the workspace starts at `initialize()` (or `open()`).
   * @throws WsError `INVALID_ARGUMENT` for an unknown or malformed option or an unsafe workspace id;
   *   `CAPABILITY_UNSUPPORTED` for `limits.pids` or host names in `network.allow`.
   */
  constructor(options: K8sWorkspaceOptions = {}) {
    const { common, own } = splitOptions('K8sWorkspace', options, K8S_KEYS, K8S_HINTS);
    checkOptions(own);
    const { limits, network, privileges, user, ...rest } = own;
    const policy = resolvePodPolicy('K8sWorkspace', {
      limits,
      network,
      privileges,
      user,
      resources: own.resources,
    });
    super({
      ...common,
      provider: new K8sProvider({
        ...rest,
        policy,
        image: own.image ?? DEFAULT_K8S_IMAGE,
        storageSize: own.storageSize ?? '1Gi',
        startTimeoutMs: own.startTimeoutMs ?? DEFAULT_K8S_START_TIMEOUT_MS,
        requestTimeoutMs: own.requestTimeoutMs ?? DEFAULT_K8S_REQUEST_TIMEOUT_MS,
      }),
    });
  }

  /** The name of the Pod (and of the PVC), once initialized. */
  get podName(): string | undefined {
    return this.provider.podName;
  }

  /** The namespace of the Pod and PVC, once initialized. */
  get namespace(): string | undefined {
    return this.provider.namespace;
  }

  /** Milliseconds the last initialize took to find or create the Pod (gateway not included). */
  get attachMs(): number | undefined {
    return this.provider.attachMs;
  }

  /** Whether the last initialize created the Pod (false: it re-attached to a running one). */
  get createdPod(): boolean | undefined {
    return this.provider.createdPod;
  }

  /** Milliseconds the gateway took to start and answer, once it did. */
  get gatewayStartMs(): number | undefined {
    return this.provider.gatewayStartMs;
  }
}
