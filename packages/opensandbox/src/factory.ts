import type { WorkspaceFactory } from '@ws/core/backend';
import { OpenSandboxWorkspace, type OpenSandboxWorkspaceOptions } from './opensandbox-workspace.js';

/** Options of {@link openSandboxWorkspaces}: the options every workspace shares. */
export type OpenSandboxWorkspacesOptions = Omit<OpenSandboxWorkspaceOptions, 'workspaceId'>;

/**
 * A {@link WorkspaceFactory} of OpenSandbox workspaces, for a `WorkspaceManager`: the workspace of an
 * id is the sandbox whose metadata carries it (found again by any process), with the other options
 * (server, key, image, owner tag…) as given. Building a workspace does no I/O; the manager
 * initializes it.
 *
 * ```ts
 * const manager = new WorkspaceManager({ factory: openSandboxWorkspaces({ image: 'my-image', owner: 'my-service' }) });
 * ```
 */
export function openSandboxWorkspaces(
  options: OpenSandboxWorkspacesOptions = {},
): WorkspaceFactory<OpenSandboxWorkspace> {
  const shared = { ...options };
  // The manager's request marks the sandbox (`ws.user`, `ws.agent`, `ws.session`).
  return (workspaceId, context) =>
    new OpenSandboxWorkspace({
      ...shared,
      workspaceId,
      ...(context?.request ? { requester: context.request } : {}),
    });
}
