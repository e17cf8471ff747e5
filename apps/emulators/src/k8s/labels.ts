import { randomUUID } from 'node:crypto';
import type Docker from 'dockerode';
import { isRecord, stringMap as stringMapOf } from '../http/http-util.js';

/** Labels of the emulator's Docker objects (pod containers, PVC and namespace volumes). */
export const K8S_LABELS = {
  /** Marks a Docker object of the Kubernetes emulator; its value is `k8s`. */
  emulator: 'ws.emulator',
  /** Which emulator instance owns the object (see `K8sEmulatorOptions.instance`). */
  instance: 'ws.k8s.instance',
  /** `pod`, `pvc`, `namespace` or `networkpolicy`. */
  kind: 'ws.k8s.kind',
  /** The object's namespace (empty for a namespace itself). */
  namespace: 'ws.k8s.namespace',
  /** The object's name. */
  name: 'ws.k8s.name',
  /** The object's `metadata.uid`. */
  uid: 'ws.k8s.uid',
  /** The object's metadata and spec at creation, as JSON. */
  object: 'ws.k8s.object',
} as const;

export const K8S_EMULATOR_LABEL_VALUE = 'k8s';

export type StoredKind = 'pod' | 'pvc' | 'namespace' | 'networkpolicy';

/** The label filter of the emulator's Docker objects: all, one instance's, or one kind of them. */
export function k8sFilter(instance?: string, kind?: StoredKind): { label: string[] } {
  const label = [`${K8S_LABELS.emulator}=${K8S_EMULATOR_LABEL_VALUE}`];
  if (instance !== undefined) label.push(`${K8S_LABELS.instance}=${instance}`);
  if (kind !== undefined) label.push(`${K8S_LABELS.kind}=${kind}`);
  return { label };
}

/** `metadata` of an object as the emulator keeps it. */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid: string;
  creationTimestamp: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  generateName?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  finalizers?: string[];
}

/** What a Docker object's labels hold: the object at its creation. */
export interface StoredObject {
  kind: StoredKind;
  metadata: ObjectMeta;
  spec: Record<string, unknown>;
}

export function storeLabels(instance: string, stored: StoredObject): Record<string, string> {
  return {
    [K8S_LABELS.emulator]: K8S_EMULATOR_LABEL_VALUE,
    [K8S_LABELS.instance]: instance,
    [K8S_LABELS.kind]: stored.kind,
    [K8S_LABELS.namespace]: stored.metadata.namespace ?? '',
    [K8S_LABELS.name]: stored.metadata.name,
    [K8S_LABELS.uid]: stored.metadata.uid,
    [K8S_LABELS.object]: JSON.stringify({ metadata: stored.metadata, spec: stored.spec }),
  };
}

/** The object a Docker object's labels describe, or undefined when they are not the emulator's. */
export function readStored(labels: Record<string, string> | undefined): StoredObject | undefined {
  const kind = labels?.[K8S_LABELS.kind];
  if (kind !== 'pod' && kind !== 'pvc' && kind !== 'namespace' && kind !== 'networkpolicy') return undefined;
  try {
    const parsed = JSON.parse(labels?.[K8S_LABELS.object] ?? '') as unknown;
    if (!isRecord(parsed) || !isRecord(parsed.metadata) || !isRecord(parsed.spec)) return undefined;
    return { kind, metadata: parsed.metadata as unknown as ObjectMeta, spec: parsed.spec };
  } catch {
    return undefined;
  }
}

function stringMap(value: unknown, field: string): Record<string, string> {
  return stringMapOf(value, field, (reason) => new TypeError(reason));
}

const ALPHANUMERIC = 'bcdfghjklmnpqrstvwxz2456789';

/** Fresh metadata from a create request's (name or generateName, labels, annotations). */
export function newMetadata(requested: Record<string, unknown>, namespace?: string): ObjectMeta {
  let name = typeof requested.name === 'string' ? requested.name : '';
  const generateName = typeof requested.generateName === 'string' ? requested.generateName : undefined;
  if (name === '' && generateName !== undefined) {
    name = generateName;
    for (let index = 0; index < 5; index++)
      name += ALPHANUMERIC[Math.floor(Math.random() * ALPHANUMERIC.length)];
  }
  return {
    name,
    ...(namespace !== undefined ? { namespace } : {}),
    uid: randomUUID(),
    creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    labels: stringMap(requested.labels, 'metadata.labels'),
    annotations: stringMap(requested.annotations, 'metadata.annotations'),
    ...(generateName !== undefined ? { generateName } : {}),
  };
}

/** RFC 3339 time without fractions, as the API server writes timestamps. */
export function timestamp(date: Date = new Date()): string {
  return date.toISOString().replace(/\.\d+Z$/, 'Z');
}

/**
 * Increasing resource versions. They start at the clock in microseconds so an emulator restarted on the
 * same objects keeps counting up.
 */
export class ResourceVersions {
  private last = Date.now() * 1000;

  next(): string {
    this.last = Math.max(this.last + 1, Date.now() * 1000);
    return String(this.last);
  }

  current(): string {
    return String(this.last);
  }
}

/**
 * The resource version of an object whose derived state can change on its own (a pod's container
 * exits): bumps whenever the rendered state differs from the last one seen.
 */
export class Versioned {
  resourceVersion: string;
  private fingerprint = '';

  constructor(private readonly versions: ResourceVersions) {
    this.resourceVersion = versions.next();
  }

  observe(state: unknown): string {
    const fingerprint = JSON.stringify(state);
    if (fingerprint !== this.fingerprint) {
      if (this.fingerprint !== '') this.resourceVersion = this.versions.next();
      this.fingerprint = fingerprint;
    }
    return this.resourceVersion;
  }
}

/**
 * The namespaced objects of one kind an earlier emulator of the instance kept, each in the labels of
 * its Docker volume, with the volume's name.
 */
export async function storedInVolumes(
  docker: Pick<Docker, 'listVolumes'>,
  instance: string,
  kind: StoredKind,
): Promise<
  { stored: StoredObject & { metadata: ObjectMeta & { namespace: string } }; volumeName: string }[]
> {
  const { Volumes } = await docker.listVolumes({ filters: k8sFilter(instance, kind) });
  const found = [];
  for (const volume of Volumes ?? []) {
    const stored = readStored(volume.Labels);
    if (stored?.metadata.namespace)
      found.push({
        stored: stored as StoredObject & { metadata: ObjectMeta & { namespace: string } },
        volumeName: volume.Name,
      });
  }
  return found;
}
