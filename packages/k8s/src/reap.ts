import {
  type CoreV1Api,
  Exec,
  KubeConfig,
  type NetworkingV1Api,
  type V1NetworkPolicy,
  type V1PersistentVolumeClaim,
  type V1Pod,
} from '@kubernetes/client-node';
import { type GcOptions, type GcReport, WsError } from '@ws/core';
import {
  type AttachedRecords,
  checkGcOptions,
  GcLedger,
  type ReapCandidate,
  type Reaper,
  type ReapProbe,
  readAttachedRecords,
  reapCandidates,
  refuseRenamedOptions,
  timeOf,
  WS_LABELS,
} from '@ws/core/backend';
import { coreApi, DEFAULT_K8S_REQUEST_TIMEOUT_MS, networkingApi } from './api.js';
import { httpCode, translateK8sError } from './errors.js';
import { WorkspaceObjects } from './k8s-objects.js';
import { ATTACHED_DIR, STALE_RECORD_MS } from './k8s-provider.js';
import { K8sSandbox } from './k8s-sandbox.js';
import { DEFAULT_K8S_START_TIMEOUT_MS } from './k8s-workspace.js';
import { belongsTo, MANAGED_BY, MANAGED_BY_LABEL } from './names.js';
import { CONTAINER_NAME } from './pod-spec.js';

/** Options of {@link gcK8s}. */
export interface K8sGcOptions extends GcOptions {
  /** A kubeconfig file's path, or a loaded `KubeConfig` (never changed). Default: the usual lookup. */
  kubeconfig?: string | KubeConfig | undefined;
  /** The namespace to reap. Default: the context's, else `default`. */
  namespace?: string | undefined;
  /**
   * The `startTimeoutMs` the workspaces were given: a Pending Pod younger than this may be one a host
   * is waiting for, and counts as in use. Default: 120 000, the workspaces' default.
   */
  startTimeoutMs?: number | undefined;
}

function loadConfig(given: string | KubeConfig | undefined): KubeConfig {
  if (given instanceof KubeConfig) return given;
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
  return config;
}

/**
 * Reaps what Kubernetes workspaces left behind in one namespace: objects carrying this project's
 * labels and id annotation (narrowed to `owner`'s `ws.owner` when given) that are not in use and have
 * been idle for `olderThanMs`. Objects without the marks are never looked at.
 *
 * Pods: a running Pod is in use while a workspace object on any host keeps its attachment record in it
 * fresh (touched every minute, stale after three); otherwise it is idle since the newest of its
 * creation, its container's start and the last touch of a record. A Pending Pod younger than
 * `startTimeoutMs` is in use (a host may be waiting for it), an older one idle since its creation; one that
 * ended is idle since its container finished. Its PVC is stamped released when it goes.
 *
 * PersistentVolumeClaims (the files): `close()` keeps a workspace's PVC, so the id opened again finds
 * its files. A PVC is in use while any Pod mounts it (as the namespace was when listed: the PVC of a
 * Pod removed in this run goes in a later one); otherwise it is idle since it was last released (its
 * `ws.released` annotation, set by `close()` and by this reaper) or, without one, since its creation.
 * A Pod deleted from outside (an eviction, `kubectl delete`) stamps nothing: its PVC keeps the time of
 * the release before, so give an age well above the longest time a workspace stays open.
 *
 * NetworkPolicies (of workspaces opened with `network: 'none'` or an allow list) go with their Pod
 * when the reaper removes it; one whose Pod is gone (as the namespace was when listed) is idle since
 * its creation. One that no rights to list NetworkPolicies let the reaper see is left alone.
 *
 * @throws WsError `INVALID_ARGUMENT` for bad options or an unreadable kubeconfig; `BACKEND_UNAVAILABLE`
 *   or `PERMISSION_DENIED` when the Pods or PVCs cannot be listed; `ABORTED` when `signal` fires (with
 *   the report so far in `details.report`).
 */
export async function gcK8s(options: K8sGcOptions): Promise<GcReport> {
  refuseRenamedOptions('gcK8s', options, { timeoutMs: 'startTimeoutMs' });
  const checked = checkGcOptions(options);
  const ledger = new GcLedger(checked);
  const config = loadConfig(checked.kubeconfig);
  const namespace =
    checked.namespace ?? config.getContextObject(config.getCurrentContext())?.namespace ?? 'default';
  const core = coreApi(config, DEFAULT_K8S_REQUEST_TIMEOUT_MS);
  const networking = networkingApi(config, DEFAULT_K8S_REQUEST_TIMEOUT_MS);
  const exec = new Exec(config);
  const startWindowMs = checked.startTimeoutMs ?? DEFAULT_K8S_START_TIMEOUT_MS;
  const selector = [
    `${MANAGED_BY_LABEL}=${MANAGED_BY}`,
    `${WS_LABELS.workspace}=true`,
    ...(checked.owner ? [`${WS_LABELS.owner}=${checked.owner}`] : []),
  ].join(',');
  let pods: V1Pod[];
  let claims: V1PersistentVolumeClaim[];
  try {
    pods = (await core.listNamespacedPod({ namespace, labelSelector: selector })).items;
  } catch (error) {
    throw translateK8sError(error, `listing the Pods of namespace ${namespace}`);
  }
  try {
    claims = (await core.listNamespacedPersistentVolumeClaim({ namespace, labelSelector: selector })).items;
  } catch (error) {
    throw translateK8sError(error, `listing the PersistentVolumeClaims of namespace ${namespace}`);
  }
  const policies = await listNetworkPolicies(networking, namespace, selector);
  // Taken before any Pod goes: a PVC whose Pod is reaped now is in use for this run.
  const mounted = claims.length > 0 ? await mountedClaims(core, namespace) : new Set<string>();
  const podNames = new Set(pods.map((pod) => pod.metadata?.name));
  const context = { core, networking, exec, namespace, startWindowMs, owner: checked.owner };
  await reapCandidates(ledger, podCandidates(context, pods), translateK8sError);
  await reapCandidates(ledger, claimCandidates(context, claims, mounted), translateK8sError);
  await reapCandidates(
    ledger,
    // Those of a listed Pod go with it (or stay with it).
    policyCandidates(
      context,
      policies.filter((policy) => !podNames.has(policy.metadata?.name)),
    ),
    translateK8sError,
  );
  return ledger.report();
}

/** The workspaces' NetworkPolicies; none when the user may not list them (then it made none). */
async function listNetworkPolicies(
  networking: NetworkingV1Api,
  namespace: string,
  labelSelector: string,
): Promise<V1NetworkPolicy[]> {
  try {
    return (await networking.listNamespacedNetworkPolicy({ namespace, labelSelector })).items;
  } catch (error) {
    if (httpCode(error) === 403 || httpCode(error) === 404) return [];
    throw translateK8sError(error, `listing the NetworkPolicies of namespace ${namespace}`);
  }
}

interface ReapContext {
  readonly core: CoreV1Api;
  readonly networking: NetworkingV1Api;
  readonly exec: Exec;
  readonly namespace: string;
  readonly startWindowMs: number;
  readonly owner: string | undefined;
}

/** The objects of one workspace, as the reaper handles them. */
const objectsOf = (context: ReapContext, name: string, workspaceId: string, owner: string | undefined) =>
  new WorkspaceObjects(context.core, context.networking, context.namespace, name, workspaceId, {
    image: '',
    storageSize: '',
    owner: owner ?? '',
    timeoutMs: context.startWindowMs,
  });

/** What the reaper decides about each listed Pod carrying every mark (and the owner's tag, when given). */
function* podCandidates(context: ReapContext, pods: readonly V1Pod[]): Generator<ReapCandidate> {
  const { namespace, startWindowMs } = context;
  for (const pod of pods) {
    const workspaceId = pod.metadata?.annotations?.[WS_LABELS.id];
    const name = pod.metadata?.name;
    // The selector is the API's; the check is ours: an object without every mark is never touched.
    if (!workspaceId || !name || !belongsTo(pod.metadata, workspaceId)) continue;
    const owner = pod.metadata?.labels?.[WS_LABELS.owner];
    if (context.owner !== undefined && owner !== context.owner) continue;
    if (pod.metadata?.deletionTimestamp) continue;
    const container = pod.status?.containerStatuses?.find((status) => status.name === CONTAINER_NAME);
    const created = Math.max(
      timeOf(pod.metadata?.annotations?.[WS_LABELS.created]),
      timeOf(pod.metadata?.creationTimestamp),
    );
    const idleSince = Math.max(created, timeOf(container?.state?.terminated?.finishedAt));
    const target = { namespace, pod: name, container: CONTAINER_NAME };
    const records = (signal?: AbortSignal): Promise<AttachedRecords> =>
      readAttachedRecords(new K8sSandbox(context.exec, target), ATTACHED_DIR, STALE_RECORD_MS, signal);
    const objects = objectsOf(context, name, workspaceId, owner);
    const phase = pod.status?.phase;
    const running = container?.state?.running;
    yield {
      kind: 'pod',
      name: `${namespace}/${name}`,
      workspaceId,
      owner,
      userId: pod.metadata?.annotations?.[WS_LABELS.user],
      agentId: pod.metadata?.annotations?.[WS_LABELS.agent],
      idleSince,
      // A Pending Pod in its start window may be one a host is waiting for.
      busy: phase === 'Pending' && Date.now() - idleSince < startWindowMs,
      ...(phase === 'Running' && running
        ? {
            probe: async (signal?: AbortSignal): Promise<ReapProbe> => {
              const found = await records(signal);
              return {
                inUse: found.fresh,
                lastUsedAt: Math.max(timeOf(running.startedAt), found.lastTouchedAt ?? 0),
              };
            },
          }
        : {}),
      // A host may have opened it meanwhile, or a new Pod taken the name.
      takenMeanwhile: async (signal) => {
        const current = await objects.readPod('missing');
        if (current && current.metadata?.uid !== pod.metadata?.uid) return true;
        return current?.status?.phase === 'Running' && (await records(signal)).fresh;
      },
      remove: async (signal) => {
        await objects.deletePod(signal);
        await objects.deleteNetworkPolicy();
        // Its files were last used now: the PVC's idle time starts here.
        await objects.markClaimReleased().catch(() => false);
      },
    };
  }
}

/**
 * What the reaper decides about each listed PVC of a closed workspace: kept while a Pod mounts it
 * (`mounted`, as the namespace was before any Pod went), else idle since its last release.
 */
function* claimCandidates(
  context: ReapContext,
  claims: readonly V1PersistentVolumeClaim[],
  mounted: ReadonlySet<string>,
): Generator<ReapCandidate> {
  const { core, namespace } = context;
  for (const claim of claims) {
    const workspaceId = claim.metadata?.annotations?.[WS_LABELS.id];
    const name = claim.metadata?.name;
    if (!workspaceId || !name || !belongsTo(claim.metadata, workspaceId)) continue;
    const owner = claim.metadata?.labels?.[WS_LABELS.owner];
    if (context.owner !== undefined && owner !== context.owner) continue;
    if (claim.metadata?.deletionTimestamp) continue;
    const annotations = claim.metadata?.annotations ?? {};
    // The last release when stamped, else the creation (a PVC whose first Pod never ran, say).
    const created = Math.max(
      timeOf(annotations[WS_LABELS.created]),
      timeOf(claim.metadata?.creationTimestamp),
    );
    const released = timeOf(annotations[WS_LABELS.released]);
    const objects = objectsOf(context, name, workspaceId, owner);
    yield {
      kind: 'pvc',
      name: `${namespace}/${name}`,
      workspaceId,
      owner,
      userId: annotations[WS_LABELS.user],
      agentId: annotations[WS_LABELS.agent],
      idleSince: released > 0 ? released : created,
      busy: mounted.has(name),
      // A host may have opened the workspace meanwhile.
      takenMeanwhile: () => podExists(core, namespace, name),
      remove: (signal) => objects.deleteClaim(signal),
    };
  }
}

/** What the reaper decides about each listed NetworkPolicy whose Pod is gone: idle since its creation. */
function* policyCandidates(
  context: ReapContext,
  policies: readonly V1NetworkPolicy[],
): Generator<ReapCandidate> {
  const { core, namespace } = context;
  for (const policy of policies) {
    const workspaceId = policy.metadata?.annotations?.[WS_LABELS.id];
    const name = policy.metadata?.name;
    if (!workspaceId || !name || !belongsTo(policy.metadata, workspaceId)) continue;
    const owner = policy.metadata?.labels?.[WS_LABELS.owner];
    if (context.owner !== undefined && owner !== context.owner) continue;
    if (policy.metadata?.deletionTimestamp) continue;
    const objects = objectsOf(context, name, workspaceId, owner);
    yield {
      kind: 'networkpolicy',
      name: `${namespace}/${name}`,
      workspaceId,
      owner,
      idleSince: Math.max(
        timeOf(policy.metadata?.annotations?.[WS_LABELS.created]),
        timeOf(policy.metadata?.creationTimestamp),
      ),
      // A host may have opened the workspace meanwhile (its Pod runs under this policy).
      takenMeanwhile: () => podExists(core, namespace, name),
      remove: () => objects.deleteNetworkPolicy(),
    };
  }
}

/** The claims that Pods of the namespace mount (any Pod, this project's or not, running or not). */
async function mountedClaims(core: CoreV1Api, namespace: string): Promise<Set<string>> {
  let pods: V1Pod[];
  try {
    pods = (await core.listNamespacedPod({ namespace })).items;
  } catch (error) {
    throw translateK8sError(error, `listing the Pods of namespace ${namespace}`);
  }
  const names = new Set<string>();
  for (const pod of pods)
    for (const volume of pod.spec?.volumes ?? [])
      if (volume.persistentVolumeClaim?.claimName) names.add(volume.persistentVolumeClaim.claimName);
  return names;
}

/** Whether a Pod of that name exists, whoever's it is. */
async function podExists(core: CoreV1Api, namespace: string, name: string): Promise<boolean> {
  try {
    await core.readNamespacedPod({ namespace, name });
    return true;
  } catch (error) {
    if (httpCode(error) === 404) return false;
    throw error;
  }
}

/** The Kubernetes backend's {@link Reaper}, with the kubeconfig and namespace fixed once. */
export function k8sReaper(defaults: Omit<K8sGcOptions, keyof GcOptions> = {}): Reaper {
  return { gc: (options) => gcK8s({ ...defaults, ...options }) };
}
