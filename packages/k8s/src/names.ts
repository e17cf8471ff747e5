import { createHash } from 'node:crypto';

/** Labels and annotations on every object a Kubernetes workspace creates, so it is found again and reaped. */
export const LABELS = {
  managedBy: 'app.kubernetes.io/managed-by',
  workspace: 'ws.workspace',
  /** A hash of the workspace id: a valid label value whatever the id holds. */
  key: 'ws.workspace.key',
  /** The id itself, when it is a valid label value (for `kubectl get -l`). */
  id: 'ws.workspace.id',
  owner: 'ws.owner',
} as const;

export const ANNOTATIONS = {
  /** The exact workspace id: what decides whether an object is this workspace's. */
  id: 'ws.workspace.id',
  created: 'ws.created',
  /** When the PVC was last let go (its Pod deleted by `close()` or by the reaper), as an ISO time. */
  released: 'ws.released',
} as const;

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
  return `${LABELS.key}=${workspaceKey(workspaceId)}`;
}

/** The labels of a workspace's objects (the user's own first: the workspace's win). */
export function workspaceLabels(
  workspaceId: string,
  owner: string,
  extra: Readonly<Record<string, string>> = {},
): Record<string, string> {
  return {
    ...extra,
    [LABELS.managedBy]: MANAGED_BY,
    [LABELS.workspace]: 'true',
    [LABELS.key]: workspaceKey(workspaceId),
    ...(isLabelValue(workspaceId) ? { [LABELS.id]: workspaceId } : {}),
    [LABELS.owner]: owner,
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
    metadata?.annotations?.[ANNOTATIONS.id] === workspaceId &&
    metadata.labels?.[LABELS.key] === workspaceKey(workspaceId) &&
    metadata.labels?.[LABELS.managedBy] === MANAGED_BY &&
    (owner === undefined || metadata.labels?.[LABELS.owner] === owner)
  );
}
