import type { V1Namespace } from '@kubernetes/client-node';
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
import type { NetworkPolicyStore } from './network-policies.js';
import type { PodStore } from './pods.js';
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

/** Namespaces that always exist. */
const BUILT_IN = ['default', 'kube-system', 'kube-public'];

interface NamespaceRecord {
  metadata: ObjectMeta;
  /** Its marker volume (none for built-in namespaces). */
  volumeName?: string;
  version: Versioned;
}

export interface NamespaceStoreOptions {
  docker: Docker;
  instance: string;
  versions: ResourceVersions;
  log: (line: string) => void;
  limits: MetadataLimits;
  /** Keeps an accepted deletion until it completes (`close()` waits for it). */
  track: <T>(work: Promise<T>) => Promise<T>;
}

/** Namespaces; each created one is an empty Docker volume holding its metadata in labels. */
export class NamespaceStore {
  private readonly records = new Map<string, NamespaceRecord>();
  pods?: PodStore;
  pvcs?: PvcStore;
  networkPolicies?: NetworkPolicyStore;

  constructor(private readonly options: NamespaceStoreOptions) {
    for (const name of BUILT_IN)
      this.records.set(name, { metadata: newMetadata({ name }), version: new Versioned(options.versions) });
  }

  async restore(): Promise<void> {
    const { Volumes } = await this.options.docker.listVolumes({
      filters: k8sFilter(this.options.instance, 'namespace'),
    });
    for (const volume of Volumes ?? []) {
      const stored = readStored(volume.Labels);
      if (stored)
        this.records.set(stored.metadata.name, {
          metadata: stored.metadata,
          volumeName: volume.Name,
          version: new Versioned(this.options.versions),
        });
    }
  }

  /** Throws 404 unless the namespace exists, or, with `forCreate`, 403 while it is terminating. */
  check(name: string, forCreate = false): void {
    const record = this.records.get(name);
    if (!record) throw notFound('namespaces', name);
    if (forCreate && record.metadata.deletionTimestamp)
      throw new K8sError(
        403,
        'Forbidden',
        `unable to create new content in namespace ${name} because it is being terminated`,
      );
  }

  async create(body: unknown): Promise<Wire<V1Namespace>> {
    if (!isRecord(body)) throw badRequest('the request body must be a Namespace object');
    const metadata = newMetadata(isRecord(body.metadata) ? body.metadata : {});
    checkMetadata('Namespace', metadata, this.options.limits, true);
    if (this.records.has(metadata.name)) throw alreadyExists('namespaces', metadata.name);
    const volumeName = `ws-k8s-${this.options.instance}-ns-${metadata.name}`;
    await this.options.docker.createVolume({
      Name: volumeName,
      Labels: storeLabels(this.options.instance, { kind: 'namespace', metadata, spec: {} }),
    });
    const record = { metadata, volumeName, version: new Versioned(this.options.versions) };
    this.records.set(metadata.name, record);
    this.options.log(`k8s: namespace ${metadata.name} created`);
    return this.render(record);
  }

  read(name: string): Wire<V1Namespace> {
    const record = this.records.get(name);
    if (!record) throw notFound('namespaces', name);
    return this.render(record);
  }

  list(accept: (metadata: ObjectMeta) => boolean): Wire<V1Namespace>[] {
    return [...this.records.values()]
      .filter((record) => accept(record.metadata))
      .map((record) => this.render(record));
  }

  /** Marks the namespace terminating, deletes its pods and claims, then the namespace itself. */
  async delete(name: string): Promise<Wire<V1Namespace>> {
    const record = this.records.get(name);
    if (!record) throw notFound('namespaces', name);
    if (!record.volumeName)
      throw new K8sError(
        403,
        'Forbidden',
        `namespaces "${name}" is forbidden: this namespace may not be deleted`,
        {
          name,
          kind: 'namespaces',
        },
      );
    if (!record.metadata.deletionTimestamp) {
      record.metadata.deletionTimestamp = timestamp();
      void this.options.track(this.drain(record));
    }
    return this.render(record);
  }

  private async drain(record: NamespaceRecord): Promise<void> {
    const name = record.metadata.name;
    try {
      for (const pod of this.pods?.names(name) ?? []) await this.pods?.delete(name, pod).catch(() => {});
      for (const claim of this.pvcs?.names(name) ?? []) await this.pvcs?.delete(name, claim).catch(() => {});
      await this.networkPolicies?.deleteAll(name);
      // Pods get their grace periods; a claim whose volume cannot go keeps the namespace (as a finalizer would).
      for (
        let attempt = 0;
        (this.pods?.names(name).length ?? 0) > 0 || (this.pvcs?.names(name).length ?? 0) > 0;
        attempt++
      ) {
        if (attempt >= 3000) {
          this.options.log(`k8s: namespace ${name} still holds objects; it stays Terminating`);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      await this.options.docker.getVolume(record.volumeName!).remove();
    } catch (error) {
      if (dockerStatus(error) !== 404) {
        this.options.log(`k8s: namespace ${name} not removed: ${dockerMessage(error)}`);
        return;
      }
    }
    this.records.delete(name);
    this.options.log(`k8s: namespace ${name} deleted`);
  }

  private render(record: NamespaceRecord): Wire<V1Namespace> {
    const phase = record.metadata.deletionTimestamp ? 'Terminating' : 'Active';
    const resourceVersion = record.version.observe(phase);
    const labels = { 'kubernetes.io/metadata.name': record.metadata.name, ...record.metadata.labels };
    return {
      kind: 'Namespace',
      apiVersion: 'v1',
      metadata: { ...record.metadata, labels, resourceVersion },
      spec: { finalizers: ['kubernetes'] },
      status: { phase },
    };
  }
}
