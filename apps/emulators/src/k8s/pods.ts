import { EventEmitter } from 'node:events';
import type { V1Pod, V1PodCondition, V1PodSpec, V1PodStatus } from '@kubernetes/client-node';
import type Docker from 'dockerode';
import { dockerMessage, dockerStatus } from '../docker/exec.js';
import { isRecord } from '../http/http-util.js';
import {
  k8sFilter,
  newMetadata,
  type ObjectMeta,
  type ResourceVersions,
  readStored,
  storeLabels,
  timestamp,
  Versioned,
} from './labels.js';
import type { EgressVerdict } from './network-policies.js';
import {
  checkPodSpec,
  claimsOf,
  containerOptions,
  giveVolumesToFsGroup,
  NODE_NAME,
  podMounts,
} from './pod-container.js';
import type { PvcStore } from './pvcs.js';
import {
  alreadyExists,
  badRequest,
  checkMetadata,
  K8sError,
  type MetadataLimits,
  notFound,
} from './status.js';
import type { Wire } from './wire.js';

/** How long after `ErrImagePull` a pod reports `ImagePullBackOff`, in ms. */
const BACK_OFF_MS = 1000;
/** How often a pod waiting for its claims checks again, in ms. */
const RETRY_MS = 250;

interface PodRecord {
  metadata: ObjectMeta;
  spec: Record<string, unknown>;
  container?: Docker.Container;
  /** Why the container is not there (yet): `ContainerCreating`, `ErrImagePull`, `CreateContainerError`. */
  waiting?: { reason: string; message?: string; since: number };
  /** Bound to the node (the emulator's one node has room for `podsPerNode`). */
  scheduled?: boolean;
  /** Its container ended (`Succeeded` or `Failed`): it no longer takes a place on the node. */
  ended?: boolean;
  /** Why it is not scheduled yet (the node is full). */
  unschedulable?: { message: string; since: string };
  /** Creating the container; deletion waits for it. */
  starting?: Promise<void>;
  deleting?: Promise<void>;
  version: Versioned;
}

export interface PodStoreOptions {
  docker: Docker;
  instance: string;
  versions: ResourceVersions;
  log: (line: string) => void;
  /** Whether pods get a network (see `K8sEmulatorOptions.network`). */
  network: boolean;
  /** Image names of pod specs → engine images; other names are used as they are. */
  images: Readonly<Record<string, string>>;
  pvcs: PvcStore;
  /** What the namespace's NetworkPolicies let a pod with these labels do on egress. */
  egressOf: (namespace: string, labels: Readonly<Record<string, string>>) => EgressVerdict;
  /** Called once a pod is gone (so deleted claims it held can go). */
  onGone: () => void;
  /** Keeps an accepted deletion until it completes (`close()` waits for it). */
  track: <T>(work: Promise<T>) => Promise<T>;
  limits: MetadataLimits & { podsPerNode: number };
}

/** A change the store made itself (a watch also polls for the ones the engine makes). */
export type PodEvent = (type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: Wire<V1Pod>) => void;

/** Pods, each backed by one Docker container labelled with the instance. */
export class PodStore {
  private readonly events = new EventEmitter();
  private readonly records = new Map<string, PodRecord>();
  private closed = false;

  constructor(private readonly options: PodStoreOptions) {
    this.events.setMaxListeners(0);
  }

  /** Calls `listener` on every change the store makes; returns the unsubscribe function. */
  subscribe(listener: PodEvent): () => void {
    this.events.on('pod', listener);
    return () => this.events.off('pod', listener);
  }

  private async announce(type: 'ADDED' | 'MODIFIED', record: PodRecord): Promise<Wire<V1Pod>> {
    const pod = await this.render(record);
    this.events.emit('pod', type, pod);
    return pod;
  }

  /** Takes over the pods of an earlier emulator of the same instance. */
  async restore(): Promise<void> {
    const containers = await this.options.docker.listContainers({
      all: true,
      filters: k8sFilter(this.options.instance, 'pod'),
    });
    for (const summary of containers) {
      const stored = readStored(summary.Labels);
      if (!stored?.metadata.namespace) continue;
      this.records.set(key(stored.metadata.namespace, stored.metadata.name), {
        metadata: stored.metadata,
        spec: stored.spec,
        container: this.options.docker.getContainer(summary.Id),
        scheduled: true,
        version: new Versioned(this.options.versions),
      });
    }
  }

  create(namespace: string, body: unknown): Promise<Wire<V1Pod>> {
    if (!isRecord(body) || !isRecord(body.spec))
      throw badRequest('the request body must be a Pod object with a spec');
    const metadata = newMetadata(isRecord(body.metadata) ? body.metadata : {}, namespace);
    checkMetadata('Pod', metadata, this.options.limits);
    const spec = { ...body.spec };
    checkPodSpec(metadata.name, spec);
    if (this.records.has(key(namespace, metadata.name))) throw alreadyExists('pods', metadata.name);
    spec.restartPolicy ??= 'Always';
    spec.terminationGracePeriodSeconds ??= 30;
    spec.dnsPolicy ??= 'ClusterFirst';
    spec.schedulerName ??= 'default-scheduler';
    spec.serviceAccountName ??= 'default';
    delete spec.nodeName;
    const record: PodRecord = {
      metadata,
      spec,
      waiting: { reason: 'ContainerCreating', since: Date.now() },
      version: new Versioned(this.options.versions),
    };
    this.records.set(key(namespace, metadata.name), record);
    const added = this.announce('ADDED', record);
    record.starting = added
      .then(() => this.start(record))
      .finally(() => this.announce('MODIFIED', record).catch(() => {}));
    this.options.log(`k8s: pod ${namespace}/${metadata.name} created`);
    return added;
  }

  /** Pods bound to the node that have not ended and are not gone (as the scheduler's cache counts them). */
  private async scheduledCount(): Promise<number> {
    const bound = () => [...this.records.values()].filter((record) => record.scheduled && !record.ended);
    // Rendering notes the ones whose container ended since.
    await Promise.all(bound().map((record) => this.render(record).catch(() => undefined)));
    // Counted after the wait, so that the caller binds a pod before any other pod is counted.
    return bound().length;
  }

  /**
   * Binds the pod to the node once it has room (`podsPerNode`, the kubelet's `maxPods`), as the
   * scheduler does; until then it is `Unschedulable`. Resolves false when it was deleted meanwhile.
   */
  private async schedule(record: PodRecord): Promise<boolean> {
    while ((await this.scheduledCount()) >= this.options.limits.podsPerNode) {
      record.unschedulable ??= {
        message:
          '0/1 nodes are available: 1 Too many pods. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.',
        since: timestamp(),
      };
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      if (this.closed || record.metadata.deletionTimestamp) return false;
    }
    record.unschedulable = undefined;
    record.scheduled = true;
    record.spec.nodeName = NODE_NAME;
    return true;
  }

  private async start(record: PodRecord): Promise<void> {
    const { namespace, name } = record.metadata as ObjectMeta & { namespace: string };
    if (!(await this.schedule(record))) return;
    await this.announce('MODIFIED', record).catch(() => {});
    const container = checkPodSpec(name, record.spec);
    const requested = container.image as string;
    const image = this.options.images[requested] ?? requested;
    try {
      await this.options.docker.getImage(image).inspect();
    } catch {
      record.waiting = {
        reason: 'ErrImagePull',
        message: `Failed to pull image "${requested}": the emulator does not pull images, and the Docker engine has no image "${image}"`,
        since: Date.now(),
      };
      this.options.log(`k8s: pod ${namespace}/${name}: no image ${image}`);
      return;
    }
    const volumes = new Map<string, string>();
    for (;;) {
      const problems: string[] = [];
      for (const mount of podMounts(name, record.spec, container)) {
        if (mount.claim === undefined) continue;
        const found = this.options.pvcs.volumeFor(namespace, mount.claim);
        if ('volume' in found) volumes.set(mount.claim, found.volume);
        else problems.push(found.problem);
      }
      if (problems.length === 0) break;
      record.waiting = { reason: 'ContainerCreating', message: problems.join('; '), since: Date.now() };
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      if (this.closed || record.metadata.deletionTimestamp) return;
    }
    // As a NetworkPolicy plugin would, at the pod's creation: denied all egress, it gets no network.
    const egress = this.options.egressOf(namespace, record.metadata.labels);
    if (egress === 'filtered')
      this.options.log(
        `k8s: pod ${namespace}/${name}: a NetworkPolicy allows some egress; the emulator filters no destinations`,
      );
    try {
      const created = await this.options.docker.createContainer(
        containerOptions({
          name: `ws-k8s-${this.options.instance}-${record.metadata.uid}`,
          hostname: name,
          image,
          spec: record.spec,
          container,
          volumes,
          network: this.options.network,
          offline: egress === 'none',
          labels: storeLabels(this.options.instance, {
            kind: 'pod',
            metadata: record.metadata,
            spec: record.spec,
          }),
        }),
      );
      record.container = created;
      await giveVolumesToFsGroup(created, record.spec, container);
      await created.start();
      record.waiting = undefined;
      this.options.log(`k8s: pod ${namespace}/${name} running in container ${created.id.slice(0, 12)}`);
    } catch (error) {
      record.waiting = { reason: 'CreateContainerError', message: dockerMessage(error), since: Date.now() };
      this.options.log(`k8s: pod ${namespace}/${name} cannot start: ${dockerMessage(error)}`);
    }
  }

  get(namespace: string, name: string): PodRecord {
    const record = this.records.get(key(namespace, name));
    if (!record) throw notFound('pods', name);
    return record;
  }

  read(namespace: string, name: string): Promise<Wire<V1Pod>> {
    return this.render(this.get(namespace, name));
  }

  async list(namespace: string | undefined, accept: (pod: Wire<V1Pod>) => boolean): Promise<Wire<V1Pod>[]> {
    const records = [...this.records.values()].filter(
      (record) => namespace === undefined || record.metadata.namespace === namespace,
    );
    const pods = await Promise.all(records.map((record) => this.render(record)));
    return pods.filter(accept);
  }

  names(namespace: string): string[] {
    return [...this.records.values()]
      .filter((record) => record.metadata.namespace === namespace)
      .map((record) => record.metadata.name);
  }

  /** Whether a pod bound to the node and not gone yet mounts the claim (as pvc-protection counts). */
  inUse(namespace: string, claim: string): boolean {
    return [...this.records.values()].some(
      (record) =>
        record.scheduled === true &&
        record.metadata.namespace === namespace &&
        claimsOf(record.spec).includes(claim),
    );
  }

  /**
   * Marks the pod terminating and stops and removes its container in the background (SIGTERM, then
   * SIGKILL after the grace period). Resolves with the pod as it is now.
   */
  async delete(namespace: string, name: string, gracePeriodSeconds?: number): Promise<Wire<V1Pod>> {
    const record = this.get(namespace, name);
    // As the pod strategy decides: a pod on no node, or one that ended, goes at once.
    const phase = (await this.render(record)).status?.phase;
    const over = !record.scheduled || phase === 'Succeeded' || phase === 'Failed';
    const grace = over
      ? 0
      : Math.max(
          0,
          Math.floor(gracePeriodSeconds ?? Number(record.spec.terminationGracePeriodSeconds ?? 30)),
        );
    if (!record.metadata.deletionTimestamp) {
      record.metadata.deletionTimestamp = timestamp(new Date(Date.now() + grace * 1000));
      record.metadata.deletionGracePeriodSeconds = grace;
      record.deleting = this.options.track(this.remove(record, grace));
      return this.announce('MODIFIED', record);
    }
    return this.render(record);
  }

  private async remove(record: PodRecord, grace: number): Promise<void> {
    await record.starting?.catch(() => {});
    const last = await this.render(record).catch(() => undefined);
    const container = record.container;
    if (container) {
      try {
        await container.stop({ t: grace });
      } catch (error) {
        const status = dockerStatus(error);
        if (status !== 304 && status !== 404) this.options.log(`k8s: stop failed: ${dockerMessage(error)}`);
      }
      try {
        await container.remove({ force: true, v: true });
      } catch (error) {
        if (dockerStatus(error) !== 404) this.options.log(`k8s: remove failed: ${dockerMessage(error)}`);
      }
    }
    const recordKey = key(record.metadata.namespace!, record.metadata.name);
    if (this.records.get(recordKey) === record) this.records.delete(recordKey);
    this.options.log(`k8s: pod ${recordKey} deleted`);
    if (last) this.events.emit('pod', 'DELETED', last);
    this.options.onGone();
  }

  /** The running container of a pod for exec; 400 when there is none (as the API server answers). */
  async runningContainer(
    namespace: string,
    name: string,
    containerName: string | null,
  ): Promise<Docker.Container> {
    const record = this.get(namespace, name);
    const own = (record.spec.containers as Record<string, unknown>[])[0]!.name as string;
    if (containerName && containerName !== own)
      throw badRequest(`container ${containerName} is not valid for pod ${name}`);
    const info = await record.container?.inspect().catch(() => undefined);
    if (!record.container || !info?.State.Running)
      throw new K8sError(400, 'BadRequest', `unable to upgrade connection: container not found ("${own}")`);
    return record.container;
  }

  close(): void {
    this.closed = true;
  }

  private async render(record: PodRecord): Promise<Wire<V1Pod>> {
    const status = await this.status(record);
    const resourceVersion = record.version.observe([status, record.metadata.deletionTimestamp]);
    return {
      kind: 'Pod',
      apiVersion: 'v1',
      metadata: { ...record.metadata, resourceVersion },
      // What the client sent, checked by `checkPodSpec`, with the API server's defaults filled in.
      spec: record.spec as unknown as Wire<V1PodSpec>,
      status,
    };
  }

  private async status(record: PodRecord): Promise<Wire<V1PodStatus>> {
    const container = (record.spec.containers as Record<string, unknown>[])[0]!;
    if (!record.scheduled) {
      const pending = record.unschedulable;
      return {
        phase: 'Pending',
        conditions: pending
          ? [
              {
                ...condition('PodScheduled', false, pending.since, 'Unschedulable'),
                message: pending.message,
              },
            ]
          : [],
        qosClass: 'BestEffort',
      };
    }
    const base = {
      name: String(container.name),
      image: String(container.image),
      imageID: '',
      restartCount: 0,
      lastState: {},
    };
    const scheduled = condition('PodScheduled', true, record.metadata.creationTimestamp);
    const info = record.container ? await record.container.inspect().catch(() => undefined) : undefined;
    // Created but not started yet (between createContainer and start): still ContainerCreating.
    if (!info || info.State.Status === 'created') {
      let waiting = record.waiting ?? { reason: 'ContainerCreating', since: Date.now() };
      if (waiting.reason === 'ErrImagePull' && Date.now() - waiting.since >= BACK_OFF_MS)
        waiting = {
          ...waiting,
          reason: 'ImagePullBackOff',
          message: `Back-off pulling image "${container.image}"`,
        };
      const { since: _since, ...state } = waiting;
      return {
        phase: 'Pending',
        conditions: [
          scheduled,
          condition('Ready', false, record.metadata.creationTimestamp, 'ContainersNotReady'),
        ],
        hostIP: '127.0.0.1',
        startTime: record.metadata.creationTimestamp,
        qosClass: 'BestEffort',
        containerStatuses: [{ ...base, ready: false, started: false, state: { waiting: state } }],
      };
    }
    const startedAt = trimTime(info.State.StartedAt);
    const running = info.State.Running && !info.State.Restarting;
    let phase = 'Running';
    let state: Record<string, unknown>;
    if (running) state = { running: { startedAt } };
    else if (info.State.Restarting)
      state = { waiting: { reason: 'CrashLoopBackOff', message: 'back-off restarting failed container' } };
    else {
      const exitCode = info.State.ExitCode;
      phase = exitCode === 0 ? 'Succeeded' : 'Failed';
      record.ended = true;
      state = {
        terminated: {
          exitCode,
          reason: exitCode === 0 ? 'Completed' : 'Error',
          startedAt,
          finishedAt: trimTime(info.State.FinishedAt),
          containerID: `docker://${info.Id}`,
        },
      };
    }
    return {
      phase,
      conditions: [
        scheduled,
        condition('Ready', running, startedAt, running ? undefined : 'ContainersNotReady'),
      ],
      hostIP: '127.0.0.1',
      startTime: record.metadata.creationTimestamp,
      qosClass: 'BestEffort',
      containerStatuses: [
        {
          ...base,
          imageID: info.Image,
          containerID: `docker://${info.Id}`,
          ready: running,
          started: running,
          restartCount: info.RestartCount ?? 0,
          state,
        },
      ],
    };
  }
}

function condition(type: string, ok: boolean, at: string, reason?: string): Wire<V1PodCondition> {
  return { type, status: ok ? 'True' : 'False', lastTransitionTime: at, ...(reason ? { reason } : {}) };
}

function trimTime(time: string): string {
  return time.replace(/\.\d+Z$/, 'Z');
}

function key(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}
