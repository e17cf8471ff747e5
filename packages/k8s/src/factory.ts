import type { WorkspaceFactory } from '@ws/core/backend';
import { K8sWorkspace, type K8sWorkspaceOptions } from './k8s-workspace.js';

/** Options of {@link k8sWorkspaces}: the options every workspace shares. */
export type K8sWorkspacesOptions = Omit<K8sWorkspaceOptions, 'workspaceId'>;

/**
 * A {@link WorkspaceFactory} of Kubernetes workspaces, for a `WorkspaceManager`: the workspace of an
 * id is the Pod and PersistentVolumeClaim named and labelled after it, found again by any process,
 * with the other options (namespace, image, owner tag…) as given. Building a workspace does no I/O;
 * the manager initializes it.
 *
 * ```ts
 * const manager = new WorkspaceManager({
 *   factory: k8sWorkspaces({ namespace: 'agents', owner: 'my-service' }),
 * });
 * ```
 *
 * @throws WsError `INVALID_ARGUMENT`, from the factory, for an unsafe id or an unusable option.
 */
export function k8sWorkspaces(options: K8sWorkspacesOptions = {}): WorkspaceFactory<K8sWorkspace> {
  const shared = { ...options };
  // The manager's request marks the Pod and claim (`ws.user`, `ws.agent`, `ws.session`).
  return (workspaceId, context) =>
    new K8sWorkspace({ ...shared, workspaceId, ...(context?.request ? { requester: context.request } : {}) });
}
