import type {
  V1PersistentVolumeClaim,
  V1PersistentVolumeClaimSpec,
  V1PersistentVolumeClaimStatus,
} from '@kubernetes/client-node';
import type Docker from 'dockerode';
import { dockerMessage, dockerStatus } from '../docker/exec.js';
import { isRecord, stringMap } from '../http/http-util.js';
import {
  newMetadata,
  type ObjectMeta,
  type ResourceVersions,
  storedInVolumes,
  storeLabels,
  timestamp,
  Versioned,
} from './labels.js';
import { applyPatch } from './patch.js';
import {
  alreadyExists,
  badRequest,
  checkMetadata,
  invalid,
  K8sError,
  type MetadataLimits,
  notFound,
} from './status.js';
import type { Wire } from './wire.js';

/** How long a new claim stays `Pending` before it is `Bound`, in ms. */
const BIND_DELAY_MS = 200;
const PROTECTION = 'kubernetes.io/pvc-protection';

interface PvcRecord {
  metadata: ObjectMeta;
  spec: Record<string, unknown>;
  volumeName: string;
  boundAt: number;
  version: Versioned;
}

export interface PvcStoreOptions {
  docker: Docker;
  instance: string;
  versions: ResourceVersions;
  log: (line: string) => void;
  /** Whether a pod that is not gone yet mounts the claim (pvc-protection). */
  inUse: (namespace: string, claim: string) => boolean;
  limits: MetadataLimits;
}

/** The Docker volume of a claim (per uid, so a re-created claim starts empty, as a new PV would). */
function volumeNameOf(instance: string, uid: string): string {
  return `ws-k8s-${instance}-pvc-${uid}`;
}

/** PersistentVolumeClaims backed by Docker named volumes labelled with the instance. */
export class PvcStore {
  private readonly records = new Map<string, PvcRecord>();

  constructor(private readonly options: PvcStoreOptions) {}

  /** Takes over the claims of an earlier emulator of the same instance. */
  async restore(): Promise<void> {
    const { docker, instance } = this.options;
    for (const { stored, volumeName } of await storedInVolumes(docker, instance, 'pvc'))
      this.records.set(key(stored.metadata.namespace, stored.metadata.name), {
        metadata: stored.metadata,
        spec: stored.spec,
        volumeName,
        boundAt: 0,
        version: new Versioned(this.options.versions),
      });
  }

  async create(namespace: string, body: unknown): Promise<Wire<V1PersistentVolumeClaim>> {
    if (!isRecord(body)) throw badRequest('the request body must be a PersistentVolumeClaim object');
    const metadata = newMetadata(isRecord(body.metadata) ? body.metadata : {}, namespace);
    checkMetadata('PersistentVolumeClaim', metadata, this.options.limits);
    if (this.records.has(key(namespace, metadata.name)))
      throw alreadyExists('persistentvolumeclaims', metadata.name);
    const spec = isRecord(body.spec) ? { ...body.spec } : {};
    if (!Array.isArray(spec.accessModes) || spec.accessModes.length === 0)
      throw invalid('PersistentVolumeClaim', metadata.name, 'spec.accessModes', 'Required value');
    const requests =
      isRecord(spec.resources) && isRecord(spec.resources.requests) ? spec.resources.requests : {};
    if (typeof requests.storage !== 'string')
      throw invalid('PersistentVolumeClaim', metadata.name, 'spec.resources[storage]', 'Required value');
    spec.storageClassName ??= 'standard';
    spec.volumeMode ??= 'Filesystem';
    metadata.finalizers = [PROTECTION];
    const volumeName = volumeNameOf(this.options.instance, metadata.uid);
    await this.options.docker.createVolume({
      Name: volumeName,
      Labels: storeLabels(this.options.instance, { kind: 'pvc', metadata, spec }),
    });
    const record: PvcRecord = {
      metadata,
      spec,
      volumeName,
      boundAt: Date.now() + BIND_DELAY_MS,
      version: new Versioned(this.options.versions),
    };
    this.records.set(key(namespace, metadata.name), record);
    this.options.log(`k8s: pvc ${namespace}/${metadata.name} created (volume ${volumeName})`);
    return this.render(record);
  }

  /** The record of a claim, or a 404. */
  get(namespace: string, name: string): PvcRecord {
    const record = this.records.get(key(namespace, name));
    if (!record) throw notFound('persistentvolumeclaims', name);
    return record;
  }

  /** The Docker volume of a bound claim that is not being deleted, or why a pod cannot mount it. */
  volumeFor(namespace: string, claim: string): { volume: string } | { problem: string } {
    const record = this.records.get(key(namespace, claim));
    if (!record) return { problem: `persistentvolumeclaim "${claim}" not found` };
    if (record.metadata.deletionTimestamp)
      return { problem: `persistentvolumeclaim "${claim}" is being deleted` };
    if (Date.now() < record.boundAt) return { problem: `pod has unbound immediate PersistentVolumeClaims` };
    return { volume: record.volumeName };
  }

  read(namespace: string, name: string): Wire<V1PersistentVolumeClaim> {
    return this.render(this.get(namespace, name));
  }

  list(
    namespace: string | undefined,
    accept: (metadata: ObjectMeta) => boolean,
  ): Wire<V1PersistentVolumeClaim>[] {
    return [...this.records.values()]
      .filter((record) => namespace === undefined || record.metadata.namespace === namespace)
      .filter((record) => accept(record.metadata))
      .map((record) => this.render(record));
  }

  names(namespace: string): string[] {
    return [...this.records.values()]
      .filter((record) => record.metadata.namespace === namespace)
      .map((record) => record.metadata.name);
  }

  /**
   * Applies a patch (`json`, `merge` or `strategic`, as the request's `Content-Type` says) as the API
   * server does: to the whole object, then checked. Labels, annotations and finalizers may change;
   * the spec is immutable (422), another name or namespace is a 400, and a `resourceVersion` in the
   * patch that is not the current one is a 409. The change lives in memory: an emulator restarted on
   * the same instance finds the claim as it was created (Docker labels cannot change).
   */
  patch(
    namespace: string,
    name: string,
    type: 'json' | 'merge' | 'strategic',
    body: unknown,
  ): Wire<V1PersistentVolumeClaim> {
    const record = this.get(namespace, name);
    const current = this.render(record);
    const patched = applyPatch(type, current, body);
    const metadata = isRecord(patched.metadata) ? patched.metadata : {};
    if (metadata.name !== name)
      throw badRequest(
        `the name of the object (${String(metadata.name)}) does not match the name on the URL (${name})`,
      );
    if (metadata.namespace !== undefined && metadata.namespace !== namespace)
      throw badRequest(
        `the namespace of the object (${String(metadata.namespace)}) does not match the namespace on the URL (${namespace})`,
      );
    const currentVersion = (current.metadata as { resourceVersion?: string }).resourceVersion;
    if (metadata.resourceVersion !== undefined && metadata.resourceVersion !== currentVersion)
      throw new K8sError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on persistentvolumeclaims "${name}": the object has been modified; please apply your changes to the latest version and try again`,
        { name, kind: 'persistentvolumeclaims' },
      );
    if (JSON.stringify(patched.spec) !== JSON.stringify(current.spec))
      throw invalid(
        'PersistentVolumeClaim',
        name,
        'spec',
        'Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims',
      );
    const strings = (value: unknown, field: string) =>
      stringMap(value, field, (reason) => badRequest(`${reason} (${field})`));
    const labels = strings(metadata.labels, 'metadata.labels');
    const annotations = strings(metadata.annotations, 'metadata.annotations');
    const finalizers = metadata.finalizers ?? [];
    if (!Array.isArray(finalizers) || finalizers.some((item) => typeof item !== 'string'))
      throw badRequest('metadata.finalizers must be a list of strings');
    record.metadata.labels = labels;
    record.metadata.annotations = annotations;
    record.metadata.finalizers = finalizers as string[];
    this.options.log(`k8s: pvc ${namespace}/${name} patched (${type})`);
    return this.render(record);
  }

  /** Marks the claim deleted; its volume goes once no pod uses it. Resolves with the object. */
  async delete(namespace: string, name: string): Promise<Wire<V1PersistentVolumeClaim>> {
    const record = this.get(namespace, name);
    record.metadata.deletionTimestamp ??= timestamp();
    record.metadata.deletionGracePeriodSeconds = 0;
    const rendered = this.render(record);
    await this.reap();
    return rendered;
  }

  /** Removes the volumes of deleted claims that no pod uses any more. */
  async reap(): Promise<void> {
    for (const [recordKey, record] of this.records) {
      const namespace = record.metadata.namespace!;
      if (!record.metadata.deletionTimestamp || this.options.inUse(namespace, record.metadata.name)) continue;
      try {
        await this.options.docker.getVolume(record.volumeName).remove();
      } catch (error) {
        if (dockerStatus(error) !== 404) {
          this.options.log(`k8s: cannot remove volume ${record.volumeName} yet: ${dockerMessage(error)}`);
          continue;
        }
      }
      if (this.records.get(recordKey) === record) this.records.delete(recordKey);
      this.options.log(`k8s: pvc ${namespace}/${record.metadata.name} deleted`);
    }
  }

  private render(record: PvcRecord): Wire<V1PersistentVolumeClaim> {
    const bound = Date.now() >= record.boundAt;
    // The spec as the client sent it, checked by `create` (access modes, a storage request).
    const given = record.spec as Wire<V1PersistentVolumeClaimSpec>;
    const storage = given.resources?.requests?.storage;
    const status: Wire<V1PersistentVolumeClaimStatus> = bound
      ? {
          phase: 'Bound',
          ...(given.accessModes ? { accessModes: given.accessModes } : {}),
          capacity: storage !== undefined ? { storage } : {},
        }
      : { phase: 'Pending' };
    const spec = bound ? { ...given, volumeName: `pvc-${record.metadata.uid}` } : given;
    const { deletionTimestamp, labels, annotations, finalizers } = record.metadata;
    const resourceVersion = record.version.observe([
      status,
      deletionTimestamp,
      labels,
      annotations,
      finalizers,
    ]);
    return {
      kind: 'PersistentVolumeClaim',
      apiVersion: 'v1',
      metadata: { ...record.metadata, resourceVersion },
      spec,
      status,
    };
  }
}

function key(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}
