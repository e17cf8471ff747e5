import { isIP } from 'node:net';
import type { V1LabelSelector, V1NetworkPolicy, V1NetworkPolicySpec } from '@kubernetes/client-node';
import type Docker from 'dockerode';
import { dockerMessage, dockerStatus } from '../docker/exec.js';
import { isRecord } from '../http/http-util.js';
import {
  newMetadata,
  type ObjectMeta,
  type ResourceVersions,
  storedInVolumes,
  storeLabels,
} from './labels.js';
import {
  alreadyExists,
  badRequest,
  checkMetadata,
  invalid,
  type MetadataLimits,
  notFound,
} from './status.js';
import type { Wire } from './wire.js';

interface PolicyRecord {
  metadata: ObjectMeta;
  spec: V1NetworkPolicySpec;
  /** Its marker volume, holding the object in its labels (so a restarted emulator finds it). */
  volumeName: string;
  resourceVersion: string;
}

export interface NetworkPolicyStoreOptions {
  docker: Docker;
  instance: string;
  versions: ResourceVersions;
  log: (line: string) => void;
  limits: MetadataLimits;
}

/**
 * What the NetworkPolicies of a namespace let a Pod with some labels do on egress: `open` (no policy
 * isolates its egress), `none` (isolated, with no rule allowing anything: the emulator gives it no
 * network), or `filtered` (isolated, with rules the emulator cannot enforce: it keeps its network).
 */
export type EgressVerdict = 'open' | 'none' | 'filtered';

function isCidr(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  const [address = '', prefix, extra] = value.split('/');
  const family = isIP(address);
  if (family === 0 || prefix === undefined || extra !== undefined || !/^\d{1,3}$/.test(prefix)) return false;
  return Number(prefix) <= (family === 4 ? 32 : 128);
}

/** Whether a `LabelSelector` (matchLabels and matchExpressions) selects `labels`; `{}` selects all. */
export function selects(selector: V1LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  for (const [key, value] of Object.entries(selector.matchLabels ?? {}))
    if (labels[key] !== value) return false;
  for (const expression of selector.matchExpressions ?? []) {
    const value = labels[expression.key];
    const values = expression.values ?? [];
    const ok =
      expression.operator === 'In'
        ? value !== undefined && values.includes(value)
        : expression.operator === 'NotIn'
          ? value === undefined || !values.includes(value)
          : expression.operator === 'Exists'
            ? value !== undefined
            : value === undefined;
    if (!ok) return false;
  }
  return true;
}

/** Checks the fields the emulator acts on (422 otherwise) and fills in the API server's defaults. */
function checkSpec(name: string, spec: unknown): V1NetworkPolicySpec {
  const fail = (field: string, problem: string) => invalid('NetworkPolicy', name, field, problem);
  if (!isRecord(spec) || !isRecord(spec.podSelector)) throw fail('spec.podSelector', 'Required value');
  const { matchLabels, matchExpressions } = spec.podSelector;
  if (matchLabels !== undefined && !isRecord(matchLabels))
    throw fail('spec.podSelector.matchLabels', 'must be a map of strings');
  for (const [index, expression] of ((matchExpressions as unknown[] | undefined) ?? []).entries())
    if (
      !isRecord(expression) ||
      typeof expression.key !== 'string' ||
      !['In', 'NotIn', 'Exists', 'DoesNotExist'].includes(String(expression.operator))
    )
      throw fail(
        `spec.podSelector.matchExpressions[${index}]`,
        'Invalid value: a key and an operator are required',
      );
  const types = spec.policyTypes;
  if (
    types !== undefined &&
    (!Array.isArray(types) || types.some((type) => type !== 'Ingress' && type !== 'Egress'))
  )
    throw fail('spec.policyTypes', 'Unsupported value: the types are "Ingress" and "Egress"');
  for (const direction of ['ingress', 'egress'] as const) {
    const rules = spec[direction];
    if (rules === undefined) continue;
    if (!Array.isArray(rules)) throw fail(`spec.${direction}`, 'must be a list of rules');
    for (const [index, rule] of rules.entries()) {
      const peers = isRecord(rule) ? rule[direction === 'egress' ? 'to' : 'from'] : undefined;
      for (const [at, peer] of ((peers as unknown[] | undefined) ?? []).entries()) {
        const block = isRecord(peer) ? peer.ipBlock : undefined;
        if (block !== undefined && !(isRecord(block) && isCidr(block.cidr)))
          throw fail(
            `spec.${direction}[${index}].${direction === 'egress' ? 'to' : 'from'}[${at}].ipBlock.cidr`,
            'Invalid value: must be a CIDR block',
          );
      }
    }
  }
  // The API server's default: Ingress always, Egress when the policy has egress rules (not an empty list).
  const given = types as string[] | undefined;
  const policyTypes =
    given && given.length > 0
      ? given
      : ['Ingress', ...(Array.isArray(spec.egress) && spec.egress.length > 0 ? ['Egress'] : [])];
  // Empty rule lists are left out, as the API server's JSON leaves out empty lists (omitempty).
  const { ingress, egress, ...rest } = spec as V1NetworkPolicySpec;
  return {
    ...rest,
    ...(ingress && ingress.length > 0 ? { ingress } : {}),
    ...(egress && egress.length > 0 ? { egress } : {}),
    policyTypes,
  } as V1NetworkPolicySpec;
}

/**
 * NetworkPolicies (networking.k8s.io/v1): kept and listed, each in an empty Docker volume holding the
 * object in its labels. The pods' store asks {@link egressOf} when it creates a pod's container: a pod
 * whose egress a policy isolates with nothing allowed gets a container with no network. The emulator
 * filters no destinations: an allow list is recorded, not enforced, and a policy applies to the pods
 * created after it only.
 */
export class NetworkPolicyStore {
  private readonly records = new Map<string, PolicyRecord>();

  constructor(private readonly options: NetworkPolicyStoreOptions) {}

  /** Takes over the policies of an earlier emulator of the same instance. */
  async restore(): Promise<void> {
    const { docker, instance } = this.options;
    for (const { stored, volumeName } of await storedInVolumes(docker, instance, 'networkpolicy'))
      this.records.set(key(stored.metadata.namespace, stored.metadata.name), {
        metadata: stored.metadata,
        spec: stored.spec as V1NetworkPolicySpec,
        volumeName,
        resourceVersion: this.options.versions.next(),
      });
  }

  async create(namespace: string, body: unknown): Promise<Wire<V1NetworkPolicy>> {
    if (!isRecord(body)) throw badRequest('the request body must be a NetworkPolicy object');
    const metadata = newMetadata(isRecord(body.metadata) ? body.metadata : {}, namespace);
    checkMetadata('NetworkPolicy', metadata, this.options.limits);
    if (this.records.has(key(namespace, metadata.name)))
      throw alreadyExists('networkpolicies', metadata.name);
    const spec = checkSpec(metadata.name, body.spec);
    const volumeName = `ws-k8s-${this.options.instance}-netpol-${metadata.uid}`;
    await this.options.docker.createVolume({
      Name: volumeName,
      Labels: storeLabels(this.options.instance, {
        kind: 'networkpolicy',
        metadata,
        spec: spec as Record<string, unknown>,
      }),
    });
    const record = { metadata, spec, volumeName, resourceVersion: this.options.versions.next() };
    this.records.set(key(namespace, metadata.name), record);
    this.options.log(`k8s: networkpolicy ${namespace}/${metadata.name} created (${verdictOf([spec])})`);
    return render(record);
  }

  read(namespace: string, name: string): Wire<V1NetworkPolicy> {
    const record = this.records.get(key(namespace, name));
    if (!record) throw notFound('networkpolicies', name);
    return render(record);
  }

  list(namespace: string | undefined, accept: (metadata: ObjectMeta) => boolean): Wire<V1NetworkPolicy>[] {
    return [...this.records.values()]
      .filter((record) => namespace === undefined || record.metadata.namespace === namespace)
      .filter((record) => accept(record.metadata))
      .map(render);
  }

  names(namespace: string): string[] {
    return [...this.records.values()]
      .filter((record) => record.metadata.namespace === namespace)
      .map((record) => record.metadata.name);
  }

  /** Deletes the policy at once (it has no finalizers); resolves with it as it was. */
  async delete(namespace: string, name: string): Promise<Wire<V1NetworkPolicy>> {
    const record = this.records.get(key(namespace, name));
    if (!record) throw notFound('networkpolicies', name);
    try {
      await this.options.docker.getVolume(record.volumeName).remove();
    } catch (error) {
      if (dockerStatus(error) !== 404) throw error;
    }
    this.records.delete(key(namespace, name));
    this.options.log(`k8s: networkpolicy ${namespace}/${name} deleted`);
    return render(record);
  }

  /** What the namespace's policies let a pod with `labels` do on egress (see {@link EgressVerdict}). */
  egressOf(namespace: string, labels: Readonly<Record<string, string>>): EgressVerdict {
    const specs = [...this.records.values()]
      .filter(
        (record) => record.metadata.namespace === namespace && selects(record.spec.podSelector ?? {}, labels),
      )
      .map((record) => record.spec);
    return verdictOf(specs);
  }

  /** Deletes every policy of the namespace (when it is deleted). */
  async deleteAll(namespace: string): Promise<void> {
    for (const name of this.names(namespace))
      await this.delete(namespace, name).catch((error: unknown) =>
        this.options.log(`k8s: networkpolicy ${namespace}/${name} not removed: ${dockerMessage(error)}`),
      );
  }
}

/** The egress of a pod the policies `specs` select (see {@link EgressVerdict}). */
function verdictOf(specs: readonly V1NetworkPolicySpec[]): EgressVerdict {
  const isolating = specs.filter((spec) => spec.policyTypes?.includes('Egress'));
  if (isolating.length === 0) return 'open';
  // The allowed egress is the union of the isolating policies' rules.
  return isolating.some((spec) => (spec.egress ?? []).length > 0) ? 'filtered' : 'none';
}

function render(record: PolicyRecord): Wire<V1NetworkPolicy> {
  return {
    kind: 'NetworkPolicy',
    apiVersion: 'networking.k8s.io/v1',
    metadata: { ...record.metadata, resourceVersion: record.resourceVersion, generation: 1 },
    spec: record.spec as Wire<V1NetworkPolicySpec>,
  };
}

function key(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}
