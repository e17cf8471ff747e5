import { Exec, KubeConfig } from '@kubernetes/client-node';
import { type CallOptions, WsError } from '@ws/core';
import {
  cgroupOomKills,
  type OwnOptions,
  type Provider,
  type ProviderOpenOptions,
  type ProviderSession,
  retryEvents,
  throwIfAborted,
  withRetry,
} from '@ws/core/backend';
import { RemoteAttachment } from '@ws/core/gateway';
import { coreApi, networkingApi } from './api.js';
import { WorkspaceObjects } from './k8s-objects.js';
import { K8sSandbox, POD_WORKDIR } from './k8s-sandbox.js';
import type { K8sWorkspaceOptions } from './k8s-workspace.js';
import { objectName } from './names.js';
import { hasMemoryLimit, type PodPolicy } from './pod-policy.js';
import { CONTAINER_NAME } from './pod-spec.js';
import { watchPod } from './pod-watch.js';

/** Where the gateway bundle goes inside the Pod (its own disk: a new Pod gets it again). */
const GATEWAY_HOME = '/tmp/.ws';
/** Where each workspace object attached to the Pod keeps its record (see `Attachments` in @ws/core/backend). */
export const ATTACHED_DIR = `${GATEWAY_HOME}/attached`;
const ATTACH_EVERY_MS = 60_000;
/** A record not touched for this long belongs to a host that went away. */
export const STALE_RECORD_MS = 180_000;

/** Options of {@link K8sProvider}: the workspace class's own (documented there), defaults resolved. */
export type K8sProviderOptions = Omit<
  OwnOptions<K8sWorkspaceOptions>,
  'limits' | 'network' | 'privileges' | 'user'
> & {
  /** `limits`, `network`, `privileges` and `user`, checked and mapped (the container's `resources` among them). */
  policy: PodPolicy;
  image: string;
  storageSize: string;
  startTimeoutMs: number;
  requestTimeoutMs: number;
};

/**
 * One Pod and one PersistentVolumeClaim per workspace id, both named after the id and labelled with
 * it. `open` creates the PVC and the Pod (or re-attaches to the running Pod), then installs the
 * gateway and runs it over one exec's stdin and stdout. `close` deletes the Pod (unless another
 * workspace object still uses it) and keeps the PVC; `destroy` deletes both.
 */
export class K8sProvider implements Provider {
  readonly backend = 'k8s';
  readonly description = 'Kubernetes-Pod-based';
  readonly expectedWorkdir = POD_WORKDIR;
  readonly isolation = 'container' as const;
  readonly mcp = true;
  readonly persistent = true;
  private config: KubeConfig | undefined;
  private objects: WorkspaceObjects | undefined;
  /** This object's hold on the Pod, while open. */
  private attached: RemoteAttachment<WorkspaceObjects> | undefined;
  /** Milliseconds the last open took to find or create the Pod (before the gateway). */
  attachMs: number | undefined;
  /** Whether the last open created the Pod (false: it re-attached to a running one). */
  createdPod: boolean | undefined;

  constructor(private readonly options: K8sProviderOptions) {}

  /** The Pod's (and the PVC's) name, once known. */
  get podName(): string | undefined {
    return this.objects?.name;
  }

  /** The namespace, once known. */
  get namespace(): string | undefined {
    return this.objects?.namespace;
  }

  /** Milliseconds the gateway took to start, once it answered. */
  get gatewayStartMs(): number | undefined {
    return this.attached?.gatewayStartMs;
  }

  private kubeConfig(): KubeConfig {
    if (this.config) return this.config;
    const given = this.options.kubeconfig;
    if (given instanceof KubeConfig) this.config = given;
    else {
      const config = new KubeConfig();
      try {
        if (typeof given === 'string') config.loadFromFile(given);
        else config.loadFromDefault();
      } catch (error) {
        throw new WsError(
          'INVALID_ARGUMENT',
          `The kubeconfig ${typeof given === 'string' ? given : '(default lookup)'} cannot be loaded: ${(error as Error).message}`,
          { cause: error },
        );
      }
      this.config = config;
    }
    return this.config;
  }

  private identify(workspaceId: string): WorkspaceObjects {
    const config = this.kubeConfig();
    const namespace =
      this.options.namespace ?? config.getContextObject(config.getCurrentContext())?.namespace ?? 'default';
    const { policy, ...options } = this.options;
    this.objects = new WorkspaceObjects(
      coreApi(config, options.requestTimeoutMs),
      networkingApi(config, options.requestTimeoutMs),
      namespace,
      objectName(workspaceId),
      workspaceId,
      {
        ...options,
        ...policy,
        owner: options.owner ?? 'ws',
        timeoutMs: options.startTimeoutMs,
      },
      (timeoutMs) => watchPod(config, namespace, objectName(workspaceId), timeoutMs),
    );
    return this.objects;
  }

  async open(options: ProviderOpenOptions): Promise<ProviderSession> {
    throwIfAborted(options.signal);
    // A Pod lost from outside is opened again on the same object: what belonged to the old one goes.
    await this.release();
    const began = performance.now();
    const objects = this.identify(options.workspaceId);
    // Both create by name (an existing object is used): safe to send again when the API server fails.
    const retry = {
      safe: true,
      ...(options.signal ? { signal: options.signal } : {}),
      ...retryEvents(options.events),
    };
    // Side by side, both before the Pod: it never runs without the network policy asked for.
    await Promise.all([
      withRetry(() => objects.ensureClaim(options.signal), retry),
      withRetry(() => objects.ensureNetworkPolicy(), retry),
    ]);
    const { created } = await withRetry(() => objects.ensurePod(options.signal), retry);
    this.createdPod = created;
    this.attachMs = performance.now() - began;
    options.events?.({
      type: created ? 'sandbox.created' : 'sandbox.reattached',
      sandboxId: `${objects.namespace}/${objects.name}`,
      durationMs: this.attachMs,
    });
    const direct = new K8sSandbox(new Exec(this.kubeConfig()), {
      namespace: objects.namespace,
      pod: objects.name,
      container: CONTAINER_NAME,
      connectTimeoutMs: this.options.requestTimeoutMs,
    });
    this.attached = new RemoteAttachment({
      vendor: objects,
      direct,
      workdir: POD_WORKDIR,
      records: { folder: ATTACHED_DIR, staleMs: STALE_RECORD_MS },
      // A Pod has no time limit: the beat only keeps this object's record fresh.
      keepAlive: { everyMs: ATTACH_EVERY_MS, tick: async () => {} },
      gateway:
        this.options.gateway === false
          ? false
          : {
              // One exec whose socket stays open: the gateway serves every request over its stdin and stdout.
              start: (argv) => direct.spawn(argv, { cwd: '/' }),
              home: GATEWAY_HOME,
              via: 'exec',
              describe: `the image ${this.options.image}`,
              // The vendor's command output is bytes: the gateway starts once the workspace is in use.
              directOutput: 'bytes',
              withoutGateway: 'commands and files go through exec directly, and MCP servers cannot run',
            },
      assetUrl: import.meta.url,
    });
    const session = await this.attached.open(options, []);
    // The container's cgroup counts what its memory limit killed (the engine reports it as such).
    return hasMemoryLimit(this.options.policy.resources)
      ? { ...session, oomKills: () => cgroupOomKills(session.sandbox) }
      : session;
  }

  /** True while the Pod exists, is not being deleted, and runs. */
  async alive(): Promise<boolean> {
    const objects = this.objects;
    if (!objects || !this.attached) return false;
    const pod = await objects.readPod().catch(() => undefined);
    return pod !== undefined && !pod.metadata?.deletionTimestamp && pod.status?.phase === 'Running';
  }

  /** Stops the gateway and the processes this object spawned, and forgets the Pod (a lost one's record goes with it). */
  private async release(): Promise<void> {
    const attached = this.attached;
    this.attached = undefined;
    await attached?.close().catch(() => false);
  }

  /**
   * Stops the gateway (and the MCP servers it runs) and deletes the Pod unless another workspace
   * object still uses it; the PVC stays, stamped with the time it was released (and goes too with
   * `deletePvcOnClose`).
   */
  async close(options: CallOptions = {}): Promise<void> {
    const objects = this.objects;
    const attached = this.attached;
    this.attached = undefined;
    const shared = (await attached?.close()) ?? false;
    if (!objects || shared) return;
    await objects.deletePod(options.signal);
    // Another object's on a Pod this one opened without a policy goes too, as well as it can (gcK8s
    // reaps what stays).
    const network = this.options.policy.network;
    if (network && network.kind !== 'full') await objects.deleteNetworkPolicy();
    else await objects.deleteNetworkPolicy().catch(() => {});
    if (this.options.deletePvcOnClose) await objects.deleteClaim(options.signal);
    // The reaper counts the PVC's idle time from here (from its creation when this fails).
    else await objects.markClaimReleased().catch(() => false);
  }

  /**
   * Deletes the workspace's Pod, NetworkPolicy and PVC (only objects carrying its id), waiting until
   * the Pod and the PVC are gone.
   */
  async destroy(options: ProviderOpenOptions): Promise<void> {
    await this.release();
    const objects = this.identify(options.workspaceId);
    await objects.deletePod(options.signal);
    await objects.deleteNetworkPolicy();
    await objects.deleteClaim(options.signal);
  }
}
