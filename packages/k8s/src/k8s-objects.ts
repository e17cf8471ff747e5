import type {
  CoreV1Api,
  NetworkingV1Api,
  V1NetworkPolicy,
  V1PersistentVolumeClaim,
  V1Pod,
  V1ResourceRequirements,
  V1Toleration,
} from '@kubernetes/client-node';
import { type Privileges, WsError } from '@ws/core';
import {
  type ResolvedNetwork,
  requesterLabels,
  throwIfAborted,
  type WorkspaceRequester,
  WS_LABELS,
} from '@ws/core/backend';
import { httpCode, statusOf, translateK8sError } from './errors.js';
import { belongsTo, MANAGED_BY, MANAGED_BY_LABEL, workspaceKey, workspaceLabels } from './names.js';
import { networkPolicyManifest, type PodUser } from './pod-policy.js';
import { CONTAINER_NAME, podManifest } from './pod-spec.js';
import type { PodChanges } from './pod-watch.js';

/** Waiting reasons and conditions that will not pass by themselves: initialize fails at once on them. */
const FATAL_WAITING = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'CrashLoopBackOff',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
]);
const GONE_WAIT_MS = 60_000;

/** What a workspace's Pod and PVC are made of. */
export interface PodSettings {
  image: string;
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never' | undefined;
  imagePullSecrets?: readonly string[] | undefined;
  storageSize: string;
  storageClassName?: string | undefined;
  resources?: V1ResourceRequirements | undefined;
  env?: Readonly<Record<string, string>> | undefined;
  labels?: Readonly<Record<string, string>> | undefined;
  nodeSelector?: Readonly<Record<string, string>> | undefined;
  tolerations?: readonly V1Toleration[] | undefined;
  serviceAccount?: string | undefined;
  /** Where the Pod may connect; `none` or an allow list: a NetworkPolicy of the workspace's own. */
  network?: ResolvedNetwork | undefined;
  /** The container's privileges. Default: hardened. */
  privileges?: Privileges | undefined;
  /** Who the container runs as. Default: the image's user. */
  user?: PodUser | undefined;
  /** Who the workspace is opened for: annotations `ws.user`, `ws.agent`, `ws.session`. */
  requester?: WorkspaceRequester | undefined;
  owner: string;
  /** How long to wait for the Pod to run, in milliseconds. */
  timeoutMs: number;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener('abort', aborted);
      resolve();
    }
    function aborted() {
      clearTimeout(timer);
      reject(signal?.reason);
    }
    signal?.addEventListener('abort', aborted, { once: true });
  });

/** Sleeps `ms`, or less when `changes` reports a change first. */
async function sleepOrChange(
  ms: number,
  changes: PodChanges | undefined,
  signal?: AbortSignal,
): Promise<void> {
  if (!changes) return sleep(ms, signal);
  const cut = new AbortController();
  const slept = sleep(ms, signal ? AbortSignal.any([signal, cut.signal]) : cut.signal);
  try {
    await Promise.race([slept, changes.next()]);
  } finally {
    cut.abort();
    await slept.catch(() => {});
  }
  throwIfAborted(signal);
}

/**
 * A spec as JSON with its keys sorted and its empty lists left out: the API server writes no empty
 * list (omitempty) and the client orders a model's keys its own way, so the same spec read back is
 * compared equal to the one asked for.
 */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => {
    if (Array.isArray(item)) return item.length === 0 ? undefined : item;
    if (item !== null && typeof item === 'object')
      return Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    return item;
  });
}

/**
 * The Pod and the PVC of one workspace id, through the core API: found by name, checked to be this
 * workspace's by their labels and id annotation before anything is done to them (an object of the
 * same name that is not is a `CONFLICT`, never changed), created, waited for and deleted.
 */
export class WorkspaceObjects {
  constructor(
    private readonly core: CoreV1Api,
    private readonly networking: NetworkingV1Api,
    readonly namespace: string,
    readonly name: string,
    private readonly workspaceId: string,
    private readonly settings: PodSettings,
    /** Watches this Pod while it starts (see `watchPod`); without it, its start is polled only. */
    private readonly watch?: (timeoutMs: number) => PodChanges,
  ) {}

  private metadata() {
    return {
      name: this.name,
      namespace: this.namespace,
      labels: workspaceLabels(this.workspaceId, this.settings.owner, this.settings.labels),
      annotations: {
        [WS_LABELS.id]: this.workspaceId,
        [WS_LABELS.created]: new Date().toISOString(),
        ...requesterLabels(this.settings.requester),
      },
    };
  }

  /** Whether an object is this workspace's: its id, and its owner tag. */
  private mine(metadata: Parameters<typeof belongsTo>[0]): boolean {
    return belongsTo(metadata, this.workspaceId, this.settings.owner);
  }

  private own<
    T extends { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> } },
  >(found: T, kind: string): T {
    if (this.mine(found.metadata)) return found;
    const details = { kind, name: this.name, namespace: this.namespace };
    // The object names derive from the id alone: a second owner of the id is refused, never let in.
    if (belongsTo(found.metadata, this.workspaceId)) {
      const owner = found.metadata?.labels?.[WS_LABELS.owner] ?? '';
      throw new WsError(
        'CONFLICT',
        `The ${kind} ${this.name} of workspace id ${JSON.stringify(this.workspaceId)} in namespace ${this.namespace} belongs to owner ${JSON.stringify(owner)}, not ${JSON.stringify(this.settings.owner)}; it is left alone (use another workspace id)`,
        { details: { ...details, owner, wantedOwner: this.settings.owner } },
      );
    }
    throw new WsError(
      'CONFLICT',
      `A ${kind} named ${this.name} exists in namespace ${this.namespace} but is not this workspace's; it is left alone`,
      { details },
    );
  }

  /** The Pod; `foreign: 'missing'` reads another's Pod of the same name as none (for deleting). */
  async readPod(foreign: 'conflict' | 'missing' = 'conflict'): Promise<V1Pod | undefined> {
    try {
      const found = await this.core.readNamespacedPod({ name: this.name, namespace: this.namespace });
      if (foreign === 'missing' && !this.mine(found.metadata)) return undefined;
      return this.own(found, 'Pod');
    } catch (error) {
      if (httpCode(error) === 404) return undefined;
      throw translateK8sError(error, `reading Pod ${this.name}`);
    }
  }

  async readClaim(
    foreign: 'conflict' | 'missing' = 'conflict',
  ): Promise<V1PersistentVolumeClaim | undefined> {
    try {
      const found = await this.core.readNamespacedPersistentVolumeClaim({
        name: this.name,
        namespace: this.namespace,
      });
      if (foreign === 'missing' && !this.mine(found.metadata)) return undefined;
      return this.own(found, 'PersistentVolumeClaim');
    } catch (error) {
      if (httpCode(error) === 404) return undefined;
      throw translateK8sError(error, `reading PersistentVolumeClaim ${this.name}`);
    }
  }

  /** Creates the namespace when the API says it is missing (a user without the right gets that error). */
  private async inNamespace<T>(create: () => Promise<T>, what: string): Promise<T> {
    try {
      return await create();
    } catch (error) {
      const status = statusOf(error);
      if (status?.code !== 404 || !/namespace/i.test(status.message ?? '')) throw error;
    }
    try {
      await this.core.createNamespace({
        body: {
          metadata: { name: this.namespace, labels: { 'app.kubernetes.io/managed-by': 'ws' } },
        },
      });
    } catch (error) {
      if (httpCode(error) !== 409)
        throw translateK8sError(error, `creating namespace ${this.namespace} for ${what}`);
    }
    return create();
  }

  /** The PVC, created when missing (one being deleted is waited out first). */
  async ensureClaim(signal?: AbortSignal): Promise<void> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const found = await this.readClaim();
      if (found && !found.metadata?.deletionTimestamp) return;
      if (found) {
        await this.waitGone(() => this.readClaim(), 'PersistentVolumeClaim', signal);
        continue;
      }
      try {
        await this.inNamespace(
          () =>
            this.core.createNamespacedPersistentVolumeClaim({
              namespace: this.namespace,
              body: {
                metadata: this.metadata(),
                spec: {
                  accessModes: ['ReadWriteOnce'],
                  resources: { requests: { storage: this.settings.storageSize } },
                  ...(this.settings.storageClassName
                    ? { storageClassName: this.settings.storageClassName }
                    : {}),
                },
              },
            }),
          `PersistentVolumeClaim ${this.name}`,
        );
        return;
      } catch (error) {
        // Another host created it first: read it again.
        if (httpCode(error) !== 409)
          throw translateK8sError(error, `creating PersistentVolumeClaim ${this.name}`);
      }
    }
    throw new WsError(
      'CONFLICT',
      `The PersistentVolumeClaim ${this.name} kept changing while being attached`,
    );
  }

  /**
   * Refuses (`CONFLICT`) a Pod found by name whose container runs as another user than `user` asks:
   * a Pod's securityContext cannot change.
   */
  private requireUser(pod: V1Pod): void {
    const asked = this.settings.user;
    if (!asked) return;
    const context = pod.spec?.containers?.[0]?.securityContext;
    const [uid, gid] = [context?.runAsUser, context?.runAsGroup];
    if (uid === asked.uid && (asked.gid === undefined || gid === asked.gid)) return;
    const running = uid === undefined ? "the image's user" : gid === undefined ? `${uid}` : `${uid}:${gid}`;
    const wanted = asked.gid === undefined ? `${asked.uid}` : `${asked.uid}:${asked.gid}`;
    throw new WsError(
      'CONFLICT',
      `The Pod ${this.name} runs as ${running}, not ${wanted}, and a Pod's user cannot change; open it with the same user, or close it first`,
      { details: { pod: this.name, user: running, wantedUser: wanted } },
    );
  }

  /**
   * The Pod, running: a running or pending one is reused; one being deleted is waited out and one
   * that ended is deleted, then a new one is created. Fails fast on an image that cannot be pulled,
   * a Pod that cannot be scheduled or a container that cannot start, deleting the Pod it created.
   * Returns whether it created the Pod.
   */
  async ensurePod(signal?: AbortSignal): Promise<{ created: boolean }> {
    for (let attempt = 0; attempt < 20; attempt++) {
      throwIfAborted(signal);
      const found = await this.readPod();
      if (found?.metadata?.deletionTimestamp) {
        await this.waitGone(() => this.readPod(), 'Pod', signal);
        continue;
      }
      if (found) {
        const phase = found.status?.phase;
        if (phase === 'Running' || phase === 'Pending') {
          this.requireUser(found);
          await this.waitRunning(false, signal);
          return { created: false };
        }
        await this.deletePod();
        continue;
      }
      try {
        await this.core.createNamespacedPod({
          namespace: this.namespace,
          body: podManifest(this.metadata(), this.name, this.settings),
        });
      } catch (error) {
        if (httpCode(error) === 409) continue;
        throw translateK8sError(error, `creating Pod ${this.name}`);
      }
      await this.waitRunning(true, signal);
      return { created: true };
    }
    throw new WsError('CONFLICT', `The Pod ${this.name} kept changing while being attached`);
  }

  /** Polls the Pod until it runs; `created`: delete it on a failure that will not pass. */
  private async waitRunning(created: boolean, signal?: AbortSignal): Promise<void> {
    // Read again as soon as the API server reports a change; polled all the same.
    const changes = this.watch?.(this.settings.timeoutMs);
    try {
      await this.pollRunning(created, changes, signal);
    } finally {
      changes?.stop();
    }
  }

  private async pollRunning(
    created: boolean,
    changes: PodChanges | undefined,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const deadline = Date.now() + this.settings.timeoutMs;
    let delay = 100;
    for (;;) {
      const pod = await this.readPod();
      if (!pod || pod.metadata?.deletionTimestamp)
        throw new WsError('BACKEND_UNAVAILABLE', `The Pod ${this.name} went away while starting`, {
          details: { pod: this.name },
        });
      const container = pod.status?.containerStatuses?.find((status) => status.name === CONTAINER_NAME);
      if (pod.status?.phase === 'Running' && container?.state?.running) return;
      const waiting = container?.state?.waiting;
      const unschedulable = pod.status?.conditions?.find(
        (condition) =>
          condition.type === 'PodScheduled' &&
          condition.status === 'False' &&
          condition.reason === 'Unschedulable',
      );
      const ended = pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded';
      const reason = unschedulable
        ? 'Unschedulable'
        : waiting?.reason && FATAL_WAITING.has(waiting.reason)
          ? waiting.reason
          : ended
            ? `Pod${pod.status?.phase}`
            : undefined;
      if (reason) {
        const message = unschedulable?.message ?? waiting?.message ?? pod.status?.message ?? '';
        if (created) await this.deletePod().catch(() => {});
        // No node has room for another Pod (the kubelet's maxPods): a count limit, not a fault.
        const full = unschedulable !== undefined && /Too many pods/.test(message);
        throw new WsError(
          full ? 'LIMIT_EXCEEDED' : 'BACKEND_ERROR',
          `The Pod ${this.name} cannot run (${reason})${message ? `: ${message}` : ''}`,
          {
            details: {
              pod: this.name,
              namespace: this.namespace,
              reason,
              message,
              image: this.settings.image,
            },
          },
        );
      }
      if (Date.now() > deadline) {
        if (created) await this.deletePod().catch(() => {});
        throw new WsError(
          'TIMEOUT',
          `The Pod ${this.name} did not run within ${this.settings.timeoutMs} ms (phase ${pod.status?.phase}${waiting?.reason ? `, ${waiting.reason}` : ''})`,
          { details: { pod: this.name, reason: waiting?.reason } },
        );
      }
      await sleepOrChange(delay, changes, signal);
      delay = Math.min(1_000, Math.round(delay * 1.5));
    }
  }

  /** Deletes the Pod (only the one this workspace's labels name) and waits until it is gone. */
  async deletePod(signal?: AbortSignal): Promise<void> {
    const found = await this.readPod('missing');
    if (!found) return;
    try {
      await this.core.deleteNamespacedPod({
        name: this.name,
        namespace: this.namespace,
        // Only the object just read: a Pod re-created meanwhile by someone else stays.
        body: { preconditions: { uid: found.metadata?.uid } },
      });
    } catch (error) {
      if (httpCode(error) !== 404 && httpCode(error) !== 409)
        throw translateK8sError(error, `deleting Pod ${this.name}`);
    }
    await this.waitGone(() => this.readPod('missing'), 'Pod', signal);
  }

  /**
   * Stamps the PVC with the time it was let go (`ws.released`), from which the reaper counts its idle
   * time. One JSON patch whose tests make it apply only to this workspace's PVC: another's, or none,
   * is left alone (false).
   */
  async markClaimReleased(at: Date = new Date(), signal?: AbortSignal): Promise<boolean> {
    throwIfAborted(signal);
    const pointer = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');
    try {
      await this.core.patchNamespacedPersistentVolumeClaim({
        name: this.name,
        namespace: this.namespace,
        body: [
          { op: 'test', path: `/metadata/annotations/${pointer(WS_LABELS.id)}`, value: this.workspaceId },
          {
            op: 'test',
            path: `/metadata/labels/${pointer(WS_LABELS.key)}`,
            value: workspaceKey(this.workspaceId),
          },
          { op: 'test', path: `/metadata/labels/${pointer(MANAGED_BY_LABEL)}`, value: MANAGED_BY },
          { op: 'test', path: `/metadata/labels/${pointer(WS_LABELS.owner)}`, value: this.settings.owner },
          {
            op: 'add',
            path: `/metadata/annotations/${pointer(WS_LABELS.released)}`,
            value: at.toISOString(),
          },
        ],
      });
      return true;
    } catch (error) {
      // Missing, or not this workspace's (a test failed).
      if (httpCode(error) === 404 || httpCode(error) === 422) return false;
      throw translateK8sError(error, `marking PersistentVolumeClaim ${this.name} released`);
    }
  }

  /** Deletes the PVC (only this workspace's) and waits until it is gone (its Pod must be gone first). */
  async deleteClaim(signal?: AbortSignal): Promise<void> {
    const found = await this.readClaim('missing');
    if (!found) return;
    if (!found.metadata?.deletionTimestamp) {
      try {
        await this.core.deleteNamespacedPersistentVolumeClaim({
          name: this.name,
          namespace: this.namespace,
          body: { preconditions: { uid: found.metadata?.uid } },
        });
      } catch (error) {
        if (httpCode(error) !== 404 && httpCode(error) !== 409)
          throw translateK8sError(error, `deleting PersistentVolumeClaim ${this.name}`);
      }
    }
    await this.waitGone(() => this.readClaim('missing'), 'PersistentVolumeClaim', signal);
  }

  /** The workspace's NetworkPolicy; `foreign: 'missing'` reads another's of the same name as none. */
  async readNetworkPolicy(
    foreign: 'conflict' | 'missing' = 'conflict',
  ): Promise<V1NetworkPolicy | undefined> {
    try {
      const found = await this.networking.readNamespacedNetworkPolicy({
        name: this.name,
        namespace: this.namespace,
      });
      if (foreign === 'missing' && !this.mine(found.metadata)) return undefined;
      return this.own(found, 'NetworkPolicy');
    } catch (error) {
      if (httpCode(error) === 404) return undefined;
      throw translateK8sError(error, `reading NetworkPolicy ${this.name}`);
    }
  }

  /**
   * Holds the Pod to `settings.network` (`none` or an allow list) with a NetworkPolicy, created before
   * the Pod so that the Pod never runs without it; one of this workspace's that says otherwise is
   * replaced. Without such a network asked for, nothing is done: a policy another workspace object
   * of the id asked for stays while its Pod runs (it goes with the Pod).
   */
  async ensureNetworkPolicy(): Promise<void> {
    const network = this.settings.network;
    if (!network || network.kind === 'full') return;
    const wanted = networkPolicyManifest(this.metadata(), this.workspaceId, network);
    const found = await this.readNetworkPolicy();
    if (found && !found.metadata?.deletionTimestamp) {
      if (canonical(found.spec) === canonical(wanted.spec)) return;
      await this.deleteNetworkPolicy();
    }
    try {
      await this.inNamespace(
        () => this.networking.createNamespacedNetworkPolicy({ namespace: this.namespace, body: wanted }),
        `NetworkPolicy ${this.name}`,
      );
    } catch (error) {
      // Another host created it first: ours is the same when it asked for the same network.
      if (httpCode(error) !== 409) throw translateK8sError(error, `creating NetworkPolicy ${this.name}`);
    }
  }

  /**
   * Deletes the workspace's NetworkPolicy (only this workspace's), if any. A user who may not read
   * NetworkPolicies made none: a 403 is ignored unless this workspace asked for a network policy.
   */
  async deleteNetworkPolicy(): Promise<void> {
    const asked = this.settings.network !== undefined && this.settings.network.kind !== 'full';
    let found: V1NetworkPolicy | undefined;
    try {
      found = await this.readNetworkPolicy('missing');
    } catch (error) {
      if (!asked && error instanceof WsError && error.code === 'PERMISSION_DENIED') return;
      throw error;
    }
    if (!found || found.metadata?.deletionTimestamp) return;
    try {
      await this.networking.deleteNamespacedNetworkPolicy({
        name: this.name,
        namespace: this.namespace,
        body: { preconditions: { uid: found.metadata?.uid } },
      });
    } catch (error) {
      if (httpCode(error) !== 404 && httpCode(error) !== 409)
        throw translateK8sError(error, `deleting NetworkPolicy ${this.name}`);
    }
  }

  private async waitGone(read: () => Promise<unknown>, kind: string, signal?: AbortSignal): Promise<void> {
    const deadline = Date.now() + GONE_WAIT_MS;
    let delay = 100;
    while (await read()) {
      if (Date.now() > deadline)
        throw new WsError(
          'TIMEOUT',
          `The ${kind} ${this.name} was still being deleted after ${GONE_WAIT_MS} ms`,
          {
            details: { kind, name: this.name },
          },
        );
      await sleep(delay, signal);
      delay = Math.min(1_000, Math.round(delay * 1.5));
    }
  }
}
