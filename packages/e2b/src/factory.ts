import type { WorkspaceFactory } from '@ws/core/backend';
import { E2BWorkspace, type E2BWorkspaceOptions } from './e2b-workspace.js';

/** Options of {@link e2bWorkspaces}: the options every workspace shares. */
export type E2BWorkspacesOptions = Omit<E2BWorkspaceOptions, 'workspaceId'>;

/**
 * A {@link WorkspaceFactory} of E2B workspaces, for a `WorkspaceManager`: the workspace of an id is
 * the sandbox whose metadata carries that id, found again (resumed when paused) by any process, with
 * the other options (template, API key, owner tag…) as given. Building a workspace does no I/O; the
 * manager initializes it.
 *
 * ```ts
 * const manager = new WorkspaceManager({
 *   factory: e2bWorkspaces({ template: 'my-template', owner: 'my-service' }),
 * });
 * ```
 *
 * @throws WsError `INVALID_ARGUMENT`, from the factory, for an unsafe id or an unusable option.
 */
export function e2bWorkspaces(options: E2BWorkspacesOptions = {}): WorkspaceFactory<E2BWorkspace> {
  const shared = { ...options };
  // The manager's request marks the sandbox (`ws.user`, `ws.agent`, `ws.session`).
  return (workspaceId, context) =>
    new E2BWorkspace({ ...shared, workspaceId, ...(context?.request ? { requester: context.request } : {}) });
}
