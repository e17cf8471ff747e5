import { createHash } from 'node:crypto';
import { WS_LABELS } from '@ws/core/backend';

/** Kubernetes' recommended label saying what manages an object; this project's objects carry {@link MANAGED_BY}. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
/** The value of the managed-by label. */
export const MANAGED_BY = 'ws';

const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

/** Whether `value` may be a label value (63 characters at most, alphanumeric at both ends). */
export function isLabelValue(value: string): boolean {
  return LABEL_VALUE.test(value);
}

/** The hash label value of a workspace id. */
export function workspaceKey(workspaceId: string): string {
  return createHash('sha256').update(workspaceId).digest('hex').slice(0, 20);
}

/**
 * The name of a workspace's Pod and PVC: `ws-<id, lowercased, other characters as '-'>-<hash>`, 63
 * characters at most. The hash keeps ids that clean up alike (`A` and `a`) apart.
 */
export function objectName(workspaceId: string): string {
  const slug = workspaceId
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-+/g, '-')
    .replace(/^-|-$/g, '')
    .slice(0, 40)
    .replace(/-$/, '');
  const hash = workspaceKey(workspaceId).slice(0, 10);
  return slug ? `ws-${slug}-${hash}` : `ws-${hash}`;
}

/** The label selector of every object of a workspace id. */
export function workspaceSelector(workspaceId: string): string {
  return `${WS_LABELS.key}=${workspaceKey(workspaceId)}`;
}

/** The labels of a workspace's objects (the user's own first: the workspace's win). */
export function workspaceLabels(
  workspaceId: string,
  owner: string,
  extra: Readonly<Record<string, string>> = {},
): Record<string, string> {
  return {
    ...extra,
    [MANAGED_BY_LABEL]: MANAGED_BY,
    [WS_LABELS.workspace]: 'true',
    [WS_LABELS.key]: workspaceKey(workspaceId),
    ...(isLabelValue(workspaceId) ? { [WS_LABELS.id]: workspaceId } : {}),
    [WS_LABELS.owner]: owner,
  };
}

/**
 * Whether an object's metadata says it belongs to the workspace id (its annotation, not only its
 * name) and, when `owner` is given, to that owner tag.
 */
export function belongsTo(
  metadata: { labels?: Record<string, string>; annotations?: Record<string, string> } | undefined,
  workspaceId: string,
  owner?: string,
): boolean {
  return (
    metadata?.annotations?.[WS_LABELS.id] === workspaceId &&
    metadata.labels?.[WS_LABELS.key] === workspaceKey(workspaceId) &&
    metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY &&
    (owner === undefined || metadata.labels?.[WS_LABELS.owner] === owner)
  );
}
